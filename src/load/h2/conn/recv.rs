//! Reading the server's frames into a [`Conn`]: each frame type as RFC 9113 §6
//! says, response heads through HPACK into what an outcome needs, and the
//! server's settings and flow-control windows.

use std::time::Instant;

use super::super::frame::{self, Head};
use super::super::hpack;
use super::{Conn, Fail, MAX_BLOCK, MAX_CONTINUATIONS, UPDATE_AT};
use crate::load::fields::{HeadSink, Keeping};
use crate::load::recorder::ErrorKind;

impl Conn {
    /// One complete frame; Err: a connection error with its code.
    pub(super) fn frame(&mut self, h: Head, p: &[u8]) -> Result<(), u32> {
        if let Some((sid, _)) = self.cont {
            if h.kind != frame::CONTINUATION || h.stream != sid {
                return Err(frame::PROTOCOL_ERROR);
            }
        }
        match h.kind {
            frame::DATA => self.data(h, p),
            frame::HEADERS => {
                self.check_stream(h.stream)?;
                let frag = frame::unpad(&h, p).map_err(|e| e.0)?;
                self.block.clear();
                self.block.extend_from_slice(frag);
                let end = h.has(frame::END_STREAM);
                if h.has(frame::END_HEADERS) {
                    self.head(h.stream, end)
                } else {
                    self.cont = Some((h.stream, end));
                    self.continuations = 0;
                    Ok(())
                }
            }
            frame::CONTINUATION => {
                let Some((sid, end)) = self.cont else {
                    return Err(frame::PROTOCOL_ERROR);
                };
                if self.block.len() + p.len() > MAX_BLOCK {
                    crate::load::conn::note_head_too_large();
                    return Err(frame::PROTOCOL_ERROR);
                }
                self.continuations += 1;
                if self.continuations > MAX_CONTINUATIONS {
                    return Err(frame::ENHANCE_YOUR_CALM);
                }
                self.block.extend_from_slice(p);
                if h.has(frame::END_HEADERS) {
                    self.cont = None;
                    self.head(sid, end)
                } else {
                    Ok(())
                }
            }
            frame::PRIORITY if h.stream == 0 => Err(frame::PROTOCOL_ERROR),
            frame::RST_STREAM => {
                if h.stream == 0 {
                    return Err(frame::PROTOCOL_ERROR);
                }
                if p.len() != 4 {
                    return Err(frame::FRAME_SIZE_ERROR);
                }
                self.check_stream(h.stream)?;
                if let Some(i) = self.find(h.stream) {
                    let fail = match frame::u32_at(p, 0) {
                        frame::REFUSED_STREAM => Fail::Retry,
                        _ => Fail::Kind(ErrorKind::Reset),
                    };
                    self.finish(i, Err(fail));
                }
                Ok(())
            }
            frame::SETTINGS => self.settings(h, p),
            frame::PUSH_PROMISE => Err(frame::PROTOCOL_ERROR),
            frame::PING => {
                if h.stream != 0 {
                    return Err(frame::PROTOCOL_ERROR);
                }
                let payload: &[u8; 8] = p.try_into().map_err(|_| frame::FRAME_SIZE_ERROR)?;
                if h.has(frame::ACK) {
                    return Ok(());
                }
                self.answer()?;
                frame::write_ping_ack(&mut self.out, payload);
                Ok(())
            }
            frame::GOAWAY => {
                if h.stream != 0 {
                    return Err(frame::PROTOCOL_ERROR);
                }
                if p.len() < 8 {
                    return Err(frame::FRAME_SIZE_ERROR);
                }
                let last = frame::u32_at(p, 0) & 0x7fff_ffff;
                let last = self.goaway.map_or(last, |l| l.min(last));
                self.goaway = Some(last);
                for i in 0..self.entries.len() {
                    let e = &self.entries[i];
                    if e.used && e.end.is_none() && e.id > last {
                        self.finish(i, Err(Fail::Retry));
                    }
                }
                Ok(())
            }
            frame::WINDOW_UPDATE => self.window_update(h, p),
            _ => Ok(()),
        }
    }

    /// HEADERS and DATA may only come on streams this client opened (§5.1).
    fn check_stream(&self, id: u32) -> Result<(), u32> {
        if id == 0 || id.is_multiple_of(2) || id >= self.next_id {
            Err(frame::PROTOCOL_ERROR)
        } else {
            Ok(())
        }
    }

    fn data(&mut self, h: Head, p: &[u8]) -> Result<(), u32> {
        self.check_stream(h.stream)?;
        let data = frame::unpad(&h, p).map_err(|e| e.0)?;
        // The whole frame counts against flow control (§6.9.1), padding included.
        self.unacked += h.len as u32;
        if self.unacked >= UPDATE_AT {
            frame::write_window_update(&mut self.out, 0, self.unacked);
            self.unacked = 0;
        }
        let Some(i) = self.find(h.stream) else {
            return Ok(());
        };
        let e = &mut self.entries[i];
        if e.status == 0 {
            // DATA before the response head (§8.1).
            return self.reset(i, frame::PROTOCOL_ERROR, ErrorKind::Protocol);
        }
        e.bytes += data.len() as u64;
        if let Some(k) = e.kept.as_deref_mut() {
            k.offer_body(data);
        }
        if h.has(frame::END_STREAM) {
            self.end_remote(i);
        } else {
            e.unacked += h.len as u32;
            if e.unacked >= UPDATE_AT {
                frame::write_window_update(&mut self.out, h.stream, e.unacked);
                e.unacked = 0;
            }
        }
        Ok(())
    }

    /// The response is complete: a request body still being sent is cut short
    /// (the server answered without it, §8.1).
    fn end_remote(&mut self, i: usize) {
        let e = &self.entries[i];
        if !e.local_end {
            frame::write_rst(&mut self.out, e.id, frame::CANCEL);
        }
        self.finish(i, Ok(()));
    }

    /// A complete header block for stream `sid`.
    fn head(&mut self, sid: u32, end_stream: bool) -> Result<(), u32> {
        let entry = self.find(sid);
        // A scenario's stream keeps some of its response head (not its trailers,
        // as HTTP/1.1 and HTTP/3 keep none): decoded through a sink that also
        // offers the fields to what it keeps, never from the cache below (a decode
        // that changes the table moves its generation, which the cache checks; one
        // that does not leaves the cache right).
        if let Some(i) = entry.filter(|&i| self.entries[i].status == 0) {
            if let Some(kept) = self.entries[i].kept.as_deref_mut() {
                let mut both = Keeping {
                    head: HeadSink::default(),
                    kept,
                };
                self.dec
                    .decode(&self.block, &mut both)
                    .map_err(|_| frame::COMPRESSION_ERROR)?;
                let sink = both.head;
                if (100..200).contains(&sink.status) {
                    // An interim head's fields are not the response's.
                    both.kept.headers.clear();
                }
                return self.head_decoded(entry, end_stream, sink);
            }
        }
        // A server sends the same head again and again (nginx's differ once a
        // second, in Date): a block equal to the last one decodes to the same when
        // it depends on nothing but itself (its additions to the table are
        // replayed), or when the table has not changed since.
        let hit = self.last_head.as_ref().is_some_and(|l| {
            l.block == self.block && l.generation.is_none_or(|g| g == self.dec.generation())
        });
        let sink = if hit {
            let l = self.last_head.as_ref().expect("checked above");
            if l.generation.is_none() {
                self.dec.replay(&l.added);
            }
            l.sink
        } else {
            let before = self.dec.generation();
            let mut sink = HeadSink::default();
            self.dec
                .decode(&self.block, &mut sink)
                .map_err(|_| frame::COMPRESSION_ERROR)?;
            let generation = if self.dec.context_free() {
                None
            } else if self.dec.generation() == before {
                Some(before)
            } else {
                self.last_head = None;
                return self.head_decoded(entry, end_stream, sink);
            };
            let l = self.last_head.get_or_insert_default();
            l.block.clear();
            l.block.extend_from_slice(&self.block);
            l.sink = sink;
            l.generation = generation;
            l.added.clear();
            l.added.extend(self.dec.added().iter().cloned());
            sink
        };
        self.head_decoded(entry, end_stream, sink)
    }

    /// What a decoded head means for the stream of `entry` (None: one no longer
    /// wanted).
    fn head_decoded(
        &mut self,
        entry: Option<usize>,
        end_stream: bool,
        sink: HeadSink,
    ) -> Result<(), u32> {
        let Some(i) = entry else {
            return Ok(());
        };
        if self.entries[i].status != 0 {
            // Trailers: they must end the stream (§8.1).
            if end_stream {
                self.end_remote(i);
                return Ok(());
            }
            return self.reset(i, frame::PROTOCOL_ERROR, ErrorKind::Protocol);
        }
        let status = sink.status;
        let bad_length = sink.length.get(String::new).is_err();
        if !(100..=999).contains(&status) || sink.bad || bad_length {
            return self.reset(i, frame::PROTOCOL_ERROR, ErrorKind::Protocol);
        }
        if status < 200 {
            // Interim (1xx): the final head follows; one ending the stream is
            // malformed (§8.1).
            if end_stream {
                return self.reset(i, frame::PROTOCOL_ERROR, ErrorKind::Protocol);
            }
            return Ok(());
        }
        if sink.size > MAX_BLOCK {
            crate::load::conn::note_head_too_large();
            return self.reset(i, frame::CANCEL, ErrorKind::Protocol);
        }
        let mark = self.mark_first_byte;
        let e = &mut self.entries[i];
        e.status = status;
        e.bytes += sink.bytes;
        e.cache = sink.cache.seen();
        e.first_byte = mark.then(Instant::now);
        if end_stream {
            self.end_remote(i);
        }
        Ok(())
    }

    fn settings(&mut self, h: Head, p: &[u8]) -> Result<(), u32> {
        if h.stream != 0 {
            return Err(frame::PROTOCOL_ERROR);
        }
        if h.has(frame::ACK) {
            return if p.is_empty() {
                Ok(())
            } else {
                Err(frame::FRAME_SIZE_ERROR)
            };
        }
        if !p.len().is_multiple_of(6) {
            return Err(frame::FRAME_SIZE_ERROR);
        }
        self.answer()?;
        for s in p.chunks_exact(6) {
            let v = frame::u32_at(s, 2);
            match u16::from_be_bytes([s[0], s[1]]) {
                frame::SETTINGS_ENABLE_PUSH if v > 1 => return Err(frame::PROTOCOL_ERROR),
                frame::SETTINGS_MAX_CONCURRENT_STREAMS => self.max_streams = v,
                frame::SETTINGS_INITIAL_WINDOW_SIZE => {
                    if i64::from(v) > frame::MAX_WINDOW {
                        return Err(frame::FLOW_CONTROL_ERROR);
                    }
                    // §6.9.2: open streams' windows move by the difference.
                    let delta = i64::from(v) - self.peer_window;
                    self.peer_window = i64::from(v);
                    for e in self
                        .entries
                        .iter_mut()
                        .filter(|e| e.used && e.end.is_none())
                    {
                        e.send_window += delta;
                    }
                    self.wake_senders();
                }
                frame::SETTINGS_MAX_FRAME_SIZE => {
                    if !(frame::DEFAULT_MAX_FRAME as u32..1 << 24).contains(&v) {
                        return Err(frame::PROTOCOL_ERROR);
                    }
                    self.max_frame = v as usize;
                }
                // How much of the server's table the requests may use.
                frame::SETTINGS_HEADER_TABLE_SIZE => self.enc.peer_limit(v),
                // The rest is unknown or advisory.
                frame::SETTINGS_MAX_HEADER_LIST_SIZE => {}
                _ => {}
            }
        }
        frame::write_settings_ack(&mut self.out);
        self.settled = true;
        Ok(())
    }

    fn window_update(&mut self, h: Head, p: &[u8]) -> Result<(), u32> {
        if p.len() != 4 {
            return Err(frame::FRAME_SIZE_ERROR);
        }
        let inc = i64::from(frame::u32_at(p, 0) & 0x7fff_ffff);
        if h.stream == 0 {
            if inc == 0 {
                return Err(frame::PROTOCOL_ERROR);
            }
            self.send_window += inc;
            if self.send_window > frame::MAX_WINDOW {
                return Err(frame::FLOW_CONTROL_ERROR);
            }
            self.wake_senders();
            return Ok(());
        }
        let Some(i) = self.find(h.stream) else {
            return Ok(());
        };
        if inc == 0 {
            return self.reset(i, frame::PROTOCOL_ERROR, ErrorKind::Protocol);
        }
        let e = &mut self.entries[i];
        e.send_window += inc;
        if e.send_window > frame::MAX_WINDOW {
            return self.reset(i, frame::FLOW_CONTROL_ERROR, ErrorKind::Protocol);
        }
        if let Some(w) = &e.waker {
            w.wake_by_ref();
        }
        Ok(())
    }

    /// Wakes the owners of streams with request body left to send.
    fn wake_senders(&self) {
        for e in &self.entries {
            if e.used && !e.local_end && e.end.is_none() {
                if let Some(w) = &e.waker {
                    w.wake_by_ref();
                }
            }
        }
    }
}

/// The last header block decoded, kept to skip decoding it again.
#[derive(Debug, Default)]
pub(super) struct LastHead {
    block: Vec<u8>,
    sink: HeadSink,
    /// None: the block depends on nothing but itself and adds `added` to the
    /// table; Some: it adds nothing and is valid while the table's generation is
    /// this.
    generation: Option<u64>,
    added: Vec<hpack::Entry>,
}
