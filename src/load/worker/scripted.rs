//! A scenario's VU (`load::script`): its setup once, then its requests as a plain VU
//! walks them, each one encoded by the VU when its variables or cookies make it
//! its own, its response's cookies, checks and extractions taken in after the
//! request is recorded (checks are counted apart: they never change a latency or
//! an error). Over HTTP/1.1 on the VU's own connection, or as a stream of a
//! shared HTTP/2 or HTTP/3 connection.

use std::time::{Duration, Instant};

use super::{Client, Gate, Picker, Worker};
use crate::load::h2::H2Slot;
use crate::load::http3::H3Slot;
use crate::load::recorder::{ErrorKind, Outcome};
use crate::load::script::{Script, VuState};

impl<'a, 'p> Worker<'a, 'p> {
    /// VU `i` (this shard's index) running `script` in the closed model.
    pub(super) async fn vu_scripted(
        &self,
        i: usize,
        script: &Script,
        slot: Option<&H2Slot>,
        h3: Option<&H3Slot>,
    ) {
        let prep = self.prep;
        let staged = !prep.plan.stages.is_empty();
        let mut client = Client::new(self, slot, h3);
        let g = prep.plan.shard.global(i as u64);
        let mut state = VuState::new(script, g);
        let mut picker = Picker::new(i as u64);
        // `setup_scope = "run"`: this process's first VU runs it, the others wait
        // for what it left.
        if !script.setup_once || i == 0 {
            for ep in 0..script.setup {
                if !self.ctl.claim() {
                    break;
                }
                let now = Instant::now();
                self.step(&mut client, &mut state, script, ep, now).await;
                self.pause(&mut state, script, ep).await;
            }
            if script.setup_once {
                let _ = prep.setup_once.set((state.vars.clone(), state.jar.clone()));
            }
        } else {
            loop {
                if let Some((vars, jar)) = prep.setup_once.get() {
                    state.adopt(script, vars, jar);
                    break;
                }
                if !self.ctl.running() {
                    client.close();
                    return;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        if !self.ctl.running() {
            client.close();
            return;
        }
        loop {
            if staged {
                match self.ramp_gate(g as f64, &mut client).await {
                    Gate::Run => {}
                    Gate::Waited => continue,
                    Gate::Done => break,
                }
            }
            if !self.ctl.claim() {
                break;
            }
            let ep = picker.pick(prep);
            let now = Instant::now();
            self.step(&mut client, &mut state, script, ep, now).await;
            self.pause(&mut state, script, ep).await;
        }
        client.close();
    }

    /// One request of a script, due at `due` (the open model's intended time; the
    /// send time in the closed model): sent, recorded, then its response taken in.
    pub(super) async fn step(
        &self,
        client: &mut Client<'_, '_>,
        state: &mut VuState,
        script: &Script,
        ep: usize,
        due: Instant,
    ) {
        let prep = self.prep;
        let step = &script.steps[ep];
        let own = state
            .prepare(
                &prep.plan.target,
                &prep.plan.endpoints[ep],
                step,
                script.cookies,
            )
            .map(|one| client.encode(&one));
        self.rec.borrow_mut().in_flight += 1;
        let sent = Instant::now();
        // The VU's last response's buffers serve this one.
        let mut kept = state.spare.take();
        let o = match own.transpose() {
            // A rendered path HTTP/2 or HTTP/3 cannot carry: nothing is sent.
            Err(_) => Outcome::failed(ErrorKind::Protocol),
            Ok(own) => {
                client
                    .request_with(ep, sent, own.as_ref(), step.capture.as_ref(), &mut kept)
                    .await
            }
        };
        let end = Instant::now();
        {
            let mut r = self.rec.borrow_mut();
            r.in_flight -= 1;
            r.record(ep, due.min(sent), sent, end, &o);
        }
        if let Some(results) = state.took(script, step, &prep.plan.target.host, o.status, kept) {
            self.rec.borrow_mut().checked(ep, results);
        }
    }

    /// The pause after step `ep` (its `sleep`, the scenario's think time).
    async fn pause(&self, state: &mut VuState, script: &Script, ep: usize) {
        let d = state.pause(script, &script.steps[ep], self.prep.plan.think_time);
        if !d.is_zero() && self.ctl.running() {
            tokio::time::sleep(d).await;
        }
    }
}
