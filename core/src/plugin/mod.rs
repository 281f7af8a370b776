//! Components: discovery (`loader`), the one selection routine every framework uses
//! (`select`), and the services table the core hands to plugins (`services`).

pub mod loader;
pub mod select;
pub mod services;

pub use loader::{discover, Component};
pub use select::{select, Choice, Selection};
