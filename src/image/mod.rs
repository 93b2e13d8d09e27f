//! Images: OCI documents (`oci`), safe layer application (`unpack`), the store (`store`) and
//! importing archives into it (`import`). The registry client builds on these.

pub mod auth;
pub mod import;
pub mod oci;
pub mod pull;
pub mod registry;
pub mod store;
pub mod unpack;
