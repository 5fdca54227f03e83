//! TODO(skeleton): owned by the probe work.
