//! Images: for now, applying layers safely (`unpack`). The registry client, the store and
//! `pull`/`import` build on it.

pub mod unpack;
