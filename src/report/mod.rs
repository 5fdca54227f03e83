//! Presentation: terminal tables and JSON for every kind of run, comparisons of
//! stored runs, the HTML report with its SVG charts, and the CSV timeline and
//! HdrHistogram interval log exports. Report code formats results it is given; it
//! never measures.

pub mod capacity;
pub mod charts;
pub mod compare;
pub mod compare_diagnose;
mod compare_page;
pub mod compare_tail;
pub mod compare_text;
pub mod compare_verdict;
pub mod csv;
pub mod demo;
pub mod diagnose;
pub mod disk;
pub mod disk_suite;
pub mod findings;
pub mod hdrlog;
pub mod html;
mod html_capacity;
mod html_diagnose;
mod html_overlay;
mod html_page;
mod html_probe;
mod html_runs;
pub mod html_serve;
mod html_verdict;
pub mod live;
pub mod load;
pub mod page;
pub mod probe;
pub mod progress;
pub mod rundata;
pub mod runs;
pub mod table;
