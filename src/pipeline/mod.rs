//! The measurement sequences as library functions: what a command runs between
//! checking its configuration and rendering the result, so that the binary, the
//! tests and the coming monitoring mode (`latscope serve`) run the same thing. A
//! pipeline measures, makes the findings and the typed document, and tells an
//! [`Observer`](crate::observe::Observer) how it goes; it never prints, never saves
//! and names neither `cli` nor `store`. Whoever runs it stops it through a [`Halt`].

pub mod capacity;
pub mod diagnose;
pub mod halt;
pub mod page;
pub mod probe;

pub use halt::Halt;
