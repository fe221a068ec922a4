//! Stopping a running read from another thread, whichever database runs it.

/// What a backend hands out to stop the statement running on one of its
/// connections; each backend implements it over its own driver's handle.
pub(crate) trait Interrupt: Send + Sync {
    /// Cancels the statement running now, if any; the next one runs as
    /// usual. Best effort: a cancel that cannot be delivered is dropped.
    fn interrupt(&self);
}

/// Stops the read running on one ledger connection from another thread
/// ([`crate::store::Ledger::interrupt_handle`]). Its own type, so callers
/// never see which database library is underneath.
pub struct InterruptHandle(Box<dyn Interrupt>);

impl InterruptHandle {
    pub(crate) fn new(handle: impl Interrupt + 'static) -> InterruptHandle {
        InterruptHandle(Box::new(handle))
    }

    /// Cancels the statement running now, if any; the next one runs as usual.
    pub fn interrupt(&self) {
        self.0.interrupt();
    }
}
