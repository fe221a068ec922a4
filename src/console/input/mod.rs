//! What the operator's keys and mouse mean: the [`intent`]s (with their
//! names, hints and help), the [`keymap`] from keys to intents, and the
//! [`mouse`]'s clicks and wheel. Pure: the shell feeds terminal events in.

pub(crate) mod intent;
pub(crate) mod keymap;
pub(crate) mod mouse;
