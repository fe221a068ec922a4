//! The console's runtime: the only part of settle that touches the
//! terminal, the clock and the signals. The shell ([`shell`]) and its first
//! state ([`start`]), the keys and the mouse read as intents ([`input`]),
//! the connections it opens ([`connections`]) and the threads that read,
//! write, count and watch on them ([`workers`], [`counter`], [`watch`],
//! [`drill_dir`], held back by the [`gate`] until the first page is up),
//! and the [`effects`] those threads perform. The model it drives is
//! [`crate::app`] (pure) and the drawing [`crate::ui`] (pure).

pub(crate) mod connections;
pub(crate) mod counter;
pub(crate) mod drill_dir;
pub mod effects;
pub(crate) mod gate;
pub(crate) mod input;
pub(crate) mod shell;
pub(crate) mod start;
pub(crate) mod watch;
pub(crate) mod workers;

pub(crate) use shell::run;
