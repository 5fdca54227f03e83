//! Golden files of every document kind.
