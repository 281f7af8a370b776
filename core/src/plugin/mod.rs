//! Components: discovery (`loader`), the one selection routine every framework uses
//! (`select`), the checked binding of the tables plugins return (`bind`), the memheap per
//! device type (`memheaps`), and the services table the core hands to plugins (`services`).

pub mod bind;
pub mod loader;
pub mod memheaps;
pub mod select;
pub mod services;

pub use loader::{discover, Component};
pub use select::{select, Choice, Selection};
