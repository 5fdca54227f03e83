//! TODO(skeleton): owned by the disk work.
