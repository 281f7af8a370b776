//! Components: discovery (`loader`), the one selection routine every framework uses
//! (`select`), the checked binding of the tables plugins return (`bind`), the memheap per
//! device type (`memheaps`). The services table the core hands to plugins is
//! `crate::ops::services`: it is made of operations, which sit above this layer.

pub mod bind;
pub mod loader;
pub mod memheaps;
pub mod select;

pub use loader::{discover, Component};
pub use select::{select, Choice, Selection};
