//! A scenario's VU on the io_uring engine (issue 34), as `worker::scripted` runs one
//! on epoll: its setup requests first, each request encoded by the VU when its
//! variables or cookies make it its own, what its checks and extractions read kept
//! by the parser, and each response taken in (cookies stored, checks counted,
//! values extracted) when its request is recorded. Under `setup_scope = "run"` the
//! process's first VU runs the setup and the others wait, then start from what it
//! left. Pauses stay on epoll ([`super::unsupported`]).
//!
//! A request the VU encoded is sent from its own buffer, which the kernel reads
//! until the send completes: such a run's sends post their completions (no
//! `SKIP_SUCCESS`), and a buffer replaced while a send of it had not completed (its
//! connection closed under it) is kept until that send has.

use bytes::Bytes;

use super::driver::Driver;
use super::exchange::Vu;
use crate::load::engine::Prepared;
use crate::load::http1::{self, Parser};
use crate::load::recorder::Recorder;
use crate::load::script::VuState;

/// A VU's scenario state on the ring.
pub(super) struct Scripted {
    /// The VU's index in this process (shard).
    vu: usize,
    state: VuState,
    /// The VU's own encoding of its request in flight (None: the run's).
    own: Option<Bytes>,
    /// Setup requests begun.
    setup_done: usize,
    /// Sends of `own` (or of `retired`) handed to the kernel, not completed yet.
    sends: u32,
    /// Encodings replaced while a send of theirs was still with the kernel.
    retired: Vec<Bytes>,
}

impl Scripted {
    /// The state of the VU with index `i` in this shard, when the run has a script.
    pub(super) fn for_vu(prep: &Prepared<'_>, i: usize) -> Option<Box<Scripted>> {
        let script = prep.plan.script.as_deref()?;
        Some(Box::new(Scripted {
            vu: i,
            state: VuState::new(script, prep.plan.shard.global(i as u64)),
            own: None,
            setup_done: 0,
            sends: 0,
            retired: Vec::new(),
        }))
    }

    /// Whether a send of this VU's is with the kernel.
    pub(super) fn sending(&self) -> bool {
        self.sends > 0
    }
}

impl Driver<'_, '_> {
    /// `n` sends of scenario VU `i`'s were handed to the kernel (n > 0), or
    /// completed or were removed before they were (n < 0): its count and the
    /// driver's move together; a plain VU's sends are not counted.
    pub(super) fn script_sends(&mut self, i: usize, n: i32) {
        let Some(s) = self.vus.get_mut(i).and_then(|v| v.script.as_deref_mut()) else {
            return;
        };
        s.sends = s.sends.saturating_add_signed(n);
        if s.sends == 0 {
            s.retired.clear();
        }
        self.script_sends = self.script_sends.saturating_add_signed(i64::from(n));
    }
}

/// Whether VU `v` waits before its next request: under `setup_scope = "run"` every
/// VU but the process's first waits until that one's setup is over, then starts
/// from the variables and cookies it left (as `worker::scripted` does).
pub(super) fn waits(prep: &Prepared<'_>, v: &mut Vu) -> bool {
    let (Some(script), Some(s)) = (prep.plan.script.as_deref(), v.script.as_deref_mut()) else {
        return false;
    };
    if !script.setup_once || script.setup == 0 || s.vu == 0 || s.setup_done == script.setup {
        return false;
    }
    match prep.setup_once.get() {
        Some((vars, jar)) => {
            s.state.adopt(script, vars, jar);
            s.setup_done = script.setup;
            false
        }
        None => true,
    }
}

/// The endpoint VU `v` sends next: its setup's, in order, then as a plain VU picks.
pub(super) fn next_ep(prep: &Prepared<'_>, v: &mut Vu) -> usize {
    let setup = prep.plan.script.as_deref().map_or(0, |s| s.setup);
    match v.script.as_deref_mut() {
        Some(s) if s.setup_done < setup => {
            s.setup_done += 1;
            s.setup_done - 1
        }
        _ => v.picker.pick(prep),
    }
}

/// Readies VU `v`'s request to endpoint `v.ep`: its own encoding when its variables
/// or cookies make it its own.
pub(super) fn prepare(prep: &Prepared<'_>, v: &mut Vu) {
    let (Some(script), Some(s)) = (prep.plan.script.as_deref(), v.script.as_deref_mut()) else {
        return;
    };
    let plan = prep.plan;
    let own = s
        .state
        .prepare(
            &plan.target,
            &plan.endpoints[v.ep],
            &script.steps[v.ep],
            script.cookies,
        )
        .map(|one| http1::encode(&plan.target, &one, plan.keepalive));
    let old = std::mem::replace(&mut s.own, own);
    if let (Some(old), true) = (old, s.sends > 0) {
        s.retired.push(old);
    }
}

/// The bytes of VU `v`'s request.
pub(super) fn request<'a>(prep: &'a Prepared<'_>, v: &'a Vu) -> &'a [u8] {
    v.script
        .as_deref()
        .and_then(|s| s.own.as_deref())
        .unwrap_or(&prep.encoded[v.ep])
}

/// The parser for VU `v`'s response: one that keeps what the step's checks read
/// (in the buffers of the VU's last response) when they read any.
pub(super) fn parser(prep: &Prepared<'_>, v: &mut Vu) -> Parser {
    let head = prep.is_head[v.ep];
    let capture = prep
        .plan
        .script
        .as_deref()
        .and_then(|script| script.steps[v.ep].capture.as_ref());
    match (capture, v.script.as_deref_mut()) {
        (Some(c), Some(s)) => {
            let reuse = v.parser.kept.take().or_else(|| s.state.spare.take());
            Parser::keeping_in(head, c, reuse)
        }
        _ => Parser::new(head),
    }
}

/// VU `v`'s request ended with `status` (0: no response): its response is taken
/// in, and its checks counted.
pub(super) fn taken(prep: &Prepared<'_>, v: &mut Vu, rec: &mut Recorder, status: u16) {
    let (Some(script), Some(s)) = (prep.plan.script.as_deref(), v.script.as_deref_mut()) else {
        return;
    };
    let step = &script.steps[v.ep];
    let kept = v.parser.kept.take();
    if let Some(results) = s
        .state
        .took(script, step, &prep.plan.target.host, status, kept)
    {
        rec.checked(v.ep, results);
    }
    if script.setup_once && s.vu == 0 && v.ep + 1 == script.setup {
        // The run-wide setup is over: the waiting VUs start from what it left.
        let _ = prep
            .setup_once
            .set((s.state.vars.clone(), s.state.jar.clone()));
    }
}
