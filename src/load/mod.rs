//! TODO(skeleton): owned by the load work.
