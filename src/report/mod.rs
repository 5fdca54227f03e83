//! Presentation: terminal tables and JSON for every kind of run. Report code formats
//! results it is given; it never measures.

pub mod disk;
pub mod findings;
pub mod load;
pub mod probe;
pub mod table;
