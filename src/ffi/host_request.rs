//! Requests the host answers exactly once through a handle: tool calls
//! (`ferrule_tool_call`) and hook consultations (`ferrule_hook`).
//!
//! A handle is the key of an entry in a table of live requests, never a pointer
//! ferrule dereferences (see `handle_table`). The answer takes the entry out of
//! the table, so from then on, on every thread and however late, the handle is
//! recognised as stale. The runner waits on a [`Pending`]; when it stops waiting
//! first (a timeout, a cancelled run), the request is cancelled and its cancel
//! handler runs, and a later answer is accepted and discarded.

use std::ffi::c_void;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::boundary::{guard_or, null_arg};
use super::foreign_data::{ferrule_free_fn, ForeignData};
use super::handle_table::HandleTable;
use super::string::ferrule_str;
use crate::error::{Error, ErrorCode, Result};
use crate::runtime::{callback_returns, CallbackKind, CallbackPool, CallbackScope};

/// Runs when a request is cancelled before the host answers it; see
/// `ferrule_tool_call_on_cancel` and `ferrule_hook_on_cancel`.
pub type ferrule_cancel_fn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// A kind of request: what a table entry holds, and where the table is.
pub(crate) trait Answerable: Send + Sync + Sized + 'static {
    /// What the host's answer becomes for the runner.
    type Answer: Send + 'static;
    /// The table of this kind's live requests.
    fn table() -> &'static HandleTable<Self>;
    /// The request's shared part.
    fn request(&self) -> &HostRequest<Self::Answer>;
    /// What a stale handle's error says, such as "this tool call was already
    /// completed or failed".
    const ANSWERED: &'static str;
}

/// The part every request has: the run it belongs to, its cancellation, the
/// one answer, and the host's cancel handler.
pub(crate) struct HostRequest<A> {
    cancel: CancellationToken,
    /// The run's own token when `cancel` is not a child of it: the request
    /// counts as cancelled as soon as the run is, before the run stops waiting.
    run_cancel: Option<CancellationToken>,
    run_serial: u64,
    state: Mutex<RequestState<A>>,
}

struct RequestState<A> {
    /// Taken by the one answer.
    answer: Option<oneshot::Sender<A>>,
    /// The host's cancel handler, kept until the request is answered. Its user
    /// data is freed when the request is answered and the handler, if it ran,
    /// returned.
    cancel_handler: Option<Arc<CancelHandler>>,
    /// The handler was started; it runs once.
    handler_fired: bool,
    /// The host's callback runs on the callback pool with the request's
    /// handle, and has not returned.
    pooled_callback_running: bool,
    /// That callback answered before it returned: its run's end waits for
    /// the return (see `runtime::callback_returns`).
    answered_before_return: bool,
}

struct CancelHandler {
    function: unsafe extern "C" fn(*mut c_void),
    user_data: ForeignData,
}

impl CancelHandler {
    /// Runs the handler on a tool callback thread, in the run's callback scope.
    fn fire(self: Arc<Self>, run_serial: u64) {
        match crate::runtime::threads() {
            Ok(threads) => threads.tool_callbacks.submit_urgent(Box::new(move || self.run(run_serial))),
            Err(_) => self.run(run_serial),
        }
    }

    fn run(&self, run_serial: u64) {
        let _scope = CallbackScope::enter(run_serial, CallbackKind::Tool);
        // SAFETY: the host registered this function for this user data.
        unsafe { (self.function)(self.user_data.data) };
    }
}

impl<A> HostRequest<A> {
    /// A request of the run `run_serial`, cancelled with `cancel`; the receiver
    /// gets the answer.
    pub(crate) fn new(cancel: CancellationToken, run_serial: u64) -> (Self, oneshot::Receiver<A>) {
        let (answer, receiver) = oneshot::channel();
        let state = Mutex::new(RequestState {
            answer: Some(answer),
            cancel_handler: None,
            handler_fired: false,
            pooled_callback_running: false,
            answered_before_return: false,
        });
        (HostRequest { cancel, run_cancel: None, state, run_serial }, receiver)
    }

    /// The request, cancelled as well as soon as `run_cancel` (its run's
    /// token, which `cancel` is no child of) is.
    pub(crate) fn with_run_cancel(self, run_cancel: CancellationToken) -> Self {
        HostRequest { run_cancel: Some(run_cancel), ..self }
    }

    fn state(&self) -> MutexGuard<'_, RequestState<A>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The serial of the run the request belongs to.
    pub(crate) fn run_serial(&self) -> u64 {
        self.run_serial
    }

    /// Answers with `answer` (discarded if the runner gave up), letting go of the
    /// cancel handler (unrun, or once it has returned) first, so a handler that
    /// never ran is freed before the run can go on.
    /// An answer the runner still waits for, given by a pooled callback
    /// before it returned, is counted first, so the run cannot end before
    /// that callback returns; a late one (a timeout, a cancelled run) is not.
    pub(crate) fn finish(&self, answer: A) {
        let (sender, handler) = {
            let mut state = self.state();
            let awaited = state.answer.as_ref().is_some_and(|sender| !sender.is_closed()) && !self.is_cancelled();
            if awaited && state.pooled_callback_running && !state.answered_before_return {
                state.answered_before_return = true;
                callback_returns::answered_before_return(self.run_serial);
            }
            (state.answer.take(), state.cancel_handler.take())
        };
        drop(handler);
        if let Some(sender) = sender {
            let _ = sender.send(answer);
        }
    }

    /// The runner gave up on the request: it is cancelled, and its cancel
    /// handler runs.
    fn abandon(&self) {
        self.cancel.cancel();
        let handler = self.state().take_unfired_handler();
        if let Some(handler) = handler {
            handler.fire(self.run_serial);
        }
    }

    /// Whether the runner no longer waits for the answer (or is about to stop):
    /// it will be discarded.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled() || self.run_cancel.as_ref().is_some_and(CancellationToken::is_cancelled)
    }

    /// Registers the host's one-shot cancel handler; it fires at once (on a
    /// callback thread) when the request was already cancelled. On error the host
    /// still owns `user_data`.
    pub(crate) fn on_cancel(
        &self,
        on_cancel: ferrule_cancel_fn,
        user_data: *mut c_void,
        free_user_data: ferrule_free_fn,
        answered: &'static str,
        what: &str,
    ) -> Result<()> {
        let function = on_cancel.ok_or_else(|| null_arg("on_cancel"))?;
        let mut state = self.state();
        if state.answer.is_none() {
            return Err(Error::new(ErrorCode::AlreadyCompleted, answered));
        }
        if state.cancel_handler.is_some() {
            return Err(Error::invalid_arg(format!("this {what} already has a cancel handler")));
        }
        // Everything is checked: from here on the user data belongs to ferrule.
        state.cancel_handler =
            Some(Arc::new(CancelHandler { function, user_data: ForeignData::new(user_data, free_user_data) }));
        let due = if self.is_cancelled() { state.take_unfired_handler() } else { None };
        drop(state);
        if let Some(handler) = due {
            handler.fire(self.run_serial);
        }
        Ok(())
    }
}

impl<A> RequestState<A> {
    /// The registered handler if it has not run yet, marked as run.
    fn take_unfired_handler(&mut self) -> Option<Arc<CancelHandler>> {
        if self.handler_fired {
            return None;
        }
        let handler = self.cancel_handler.clone()?;
        self.handler_fired = true;
        Some(handler)
    }
}

/// A request's handle as ferrule passes it to the host: the key of its table
/// entry.
pub(crate) struct Handle<T>(usize, std::marker::PhantomData<fn() -> T>);

impl<T> Clone for Handle<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Handle<T> {}

impl<T: Answerable> Handle<T> {
    /// The handle behind a host's pointer; `NULL_ARG` (naming `name`) for NULL.
    pub(crate) fn from_ptr<P>(pointer: *const P, name: &str) -> Result<Self> {
        if pointer.is_null() {
            return Err(null_arg(name));
        }
        Ok(Handle(pointer.addr(), std::marker::PhantomData))
    }

    /// The handle as the host's pointer type: an address without provenance,
    /// since nothing ever dereferences it.
    pub(crate) fn as_ptr<P>(self) -> *mut P {
        std::ptr::without_provenance_mut(self.0)
    }

    /// The request, while the host has not answered it.
    pub(crate) fn live(self) -> Result<Arc<T>> {
        T::table().get(self.0).ok_or_else(|| Error::new(ErrorCode::AlreadyCompleted, T::ANSWERED))
    }

    /// Takes the request out of the table: the one answer.
    pub(crate) fn take(self) -> Result<Arc<T>> {
        T::table().remove(self.0).ok_or_else(|| Error::new(ErrorCode::AlreadyCompleted, T::ANSWERED))
    }
}

/// Lends one of a live request's strings (empty for NULL and for a request that
/// was answered). The table entry keeps them alive until the request is
/// answered, which is as long as the host may use them.
pub(crate) fn borrow_string<T: Answerable, P>(pointer: *const P, field: fn(&T) -> ferrule_str) -> ferrule_str {
    let mut text = ferrule_str::EMPTY;
    // SAFETY: `text` is a local `ferrule_str`.
    unsafe { borrow_strings::<T, P, 1>(pointer, [(field, &mut text)]) };
    text
}

/// One string to lend: which of the request's, and where the host wants it.
pub(crate) type Lent<T> = (fn(&T) -> ferrule_str, *mut ferrule_str);

/// Lends several of a live request's strings at once, one look-up for all:
/// each is written where its pointer points, unless that pointer is NULL.
/// Each is empty first (also in a forked child, and if the look-up fails), as
/// [`borrow_string`]'s are for NULL and for a request that was answered.
///
/// # Safety
/// Each non-NULL pointer must be valid for writing one `ferrule_str`.
pub(crate) unsafe fn borrow_strings<T: Answerable, P, const N: usize>(pointer: *const P, fields: [Lent<T>; N]) {
    for (_, out) in fields {
        if !out.is_null() {
            // SAFETY: the caller's promise; unaligned, as a host's scratch memory may be.
            unsafe { out.write_unaligned(ferrule_str::EMPTY) };
        }
    }
    guard_or((), || {
        let Ok(entry) = Handle::<T>::from_ptr(pointer, "handle").and_then(Handle::live) else { return };
        for (field, out) in fields {
            if !out.is_null() {
                // SAFETY: as above.
                unsafe { out.write_unaligned(field(&entry)) };
            }
        }
    })
}

/// Whether the runner no longer waits for the request's answer; true as well for
/// a request that was answered, and for NULL.
pub(crate) fn is_cancelled<T: Answerable, P>(pointer: *const P) -> bool {
    guard_or(true, || {
        Handle::<T>::from_ptr(pointer, "handle")
            .and_then(Handle::live)
            .map_or(true, |entry| entry.request().is_cancelled())
    })
}

/// Enters `entry` in its table and returns what hands it to the host, with the
/// future of its answer (`receiver`, from [`HostRequest::new`]). `None` when the
/// table is full.
pub(crate) fn begin<T: Answerable>(
    entry: T,
    receiver: oneshot::Receiver<T::Answer>,
) -> Option<(Ticket<T>, Pending<T>)> {
    let entry = Arc::new(entry);
    let key = T::table().insert(entry.clone())?;
    Some((
        Ticket { handle: Handle(key, std::marker::PhantomData), entry: entry.clone(), handed_over: false },
        Pending { receiver, entry, resolved: false },
    ))
}

/// A registered request not yet handed to the host. Dropped without being handed
/// over, it takes the request out of the table: the host never sees it.
pub(crate) struct Ticket<T: Answerable> {
    handle: Handle<T>,
    entry: Arc<T>,
    handed_over: bool,
}

impl<T: Answerable> Ticket<T> {
    /// Calls `deliver` with the request's handle, in the run's callback scope,
    /// unless the request was cancelled first (while it waited for a thread).
    pub(crate) fn hand_over(mut self, deliver: impl FnOnce(Handle<T>)) {
        let request = self.entry.request();
        if request.is_cancelled() {
            return;
        }
        self.handed_over = true;
        let _scope = CallbackScope::enter(request.run_serial(), CallbackKind::Tool);
        deliver(self.handle);
    }

    /// [`hand_over`](Self::hand_over) on a callback thread, where the
    /// callback may answer and go on running. The returned mark is dropped
    /// once the callback returned and its holds were dropped.
    fn hand_over_pooled(self, deliver: impl FnOnce(Handle<T>)) -> CallbackReturned<T> {
        let entry = self.entry.clone();
        entry.request().state().pooled_callback_running = true;
        // Made first, so even an unwinding callback is marked returned.
        let returned = CallbackReturned { entry: Some(entry) };
        self.hand_over(deliver);
        returned
    }
}

/// Runs the host's callback `call` with the request's handle on the callback
/// pool. Once it returned, the pool thread drops `callback` (the callback's
/// user data) and then tells the run, which ends only after callbacks that
/// answered have returned.
pub(crate) fn run_on_pool<T: Answerable, C: Send + Sync + 'static>(
    pool: &'static CallbackPool,
    callback: Arc<C>,
    ticket: Ticket<T>,
    call: fn(&C, Handle<T>),
) {
    pool.submit(Box::new(move || {
        let returned = ticket.hand_over_pooled(|handle| call(&callback, handle));
        drop(callback);
        drop(returned);
    }));
}

/// A pooled callback's return, marked when dropped.
struct CallbackReturned<T: Answerable> {
    entry: Option<Arc<T>>,
}

impl<T: Answerable> Drop for CallbackReturned<T> {
    fn drop(&mut self) {
        let Some(entry) = self.entry.take() else { return };
        let request = entry.request();
        let counted = {
            let mut state = request.state();
            state.pooled_callback_running = false;
            std::mem::take(&mut state.answered_before_return)
        };
        let run_serial = request.run_serial;
        // The request may hold what the callback needs (a host model's
        // request holds the model): it goes before the run is told.
        drop(entry);
        if counted {
            callback_returns::returned(run_serial);
        }
    }
}

impl<T: Answerable> Drop for Ticket<T> {
    fn drop(&mut self) {
        if !self.handed_over {
            T::table().remove(self.handle.0);
        }
    }
}

/// The runner's side of a request: resolves with the host's answer, or `None`
/// when the request went away unanswered. Dropped before that (a timeout, a
/// cancelled run), it abandons the request.
pub(crate) struct Pending<T: Answerable> {
    receiver: oneshot::Receiver<T::Answer>,
    entry: Arc<T>,
    resolved: bool,
}

impl<T: Answerable> Pending<T> {
    /// The host's answer if it has come already (the host answered inside the
    /// callback), taken without waiting: unlike a poll, this does not count
    /// against the task's cooperative budget.
    pub(crate) fn answered(&mut self) -> Option<T::Answer> {
        let answer = self.receiver.try_recv().ok()?;
        self.resolved = true;
        Some(answer)
    }
}

impl<T: Answerable> Future for Pending<T> {
    type Output = Option<T::Answer>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let answer = std::task::ready!(Pin::new(&mut self.receiver).poll(cx));
        self.resolved = true;
        Poll::Ready(answer.ok())
    }
}

impl<T: Answerable> Drop for Pending<T> {
    fn drop(&mut self) {
        if !self.resolved {
            self.entry.request().abandon();
        }
    }
}
