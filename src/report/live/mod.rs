//! The full-screen live views of a run (ratatui on crossterm): `load` (and the ramp
//! of `diagnose`/`demo`) and `disk`. The command hands what the engine measured to a
//! UI thread that owns the terminal, folds it into the view's state (a [`Screen`])
//! and redraws at most 4 times a second, reading keys in between (`q`/Ctrl-C stop
//! the run as Ctrl-C always did, `p` pauses the chart, `m` hides the max line, `?`
//! help). Raw mode turns Ctrl-C into a key, so it is mapped to the same stop. The
//! terminal is restored when the view ends, on a panic (a hook), and before a second
//! signal ends the process; the command then prints its usual text summary into the
//! restored scrollback. The terminal handling, the keys and the widgets every view
//! has ([`chrome`]) are shared; each view brings its state and its layout.
//!
//! Presentation only: the view reads what the engine measured and never measures.

pub mod chrome;
pub mod disk;
pub mod disk_view;
pub mod state;
pub mod view;

use std::io::{BufWriter, IsTerminal, Stderr, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Once, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::{cursor, execute, terminal};
use ratatui::{Frame, Terminal};

pub use disk::{DiskSetup, DiskState};
pub use state::{LiveState, Setup};

use crate::load::Progress;

/// The shortest time between two frames (at most 4 per second).
pub const FRAME: Duration = Duration::from_millis(250);
/// How long the UI thread waits for a key before it looks at the channel again.
const KEY_WAIT: Duration = Duration::from_millis(100);

/// Whether the terminal is in the view's mode (raw, alternate screen) right now.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The terminal's settings before raw mode, for [`leave_in_signal_handler`].
static SAVED: OnceLock<libc::termios> = OnceLock::new();

/// Whether a run should get the live view: stdout and stderr are terminals, TERM is
/// set and not `dumb`, and neither `--json` nor `--no-tui` asked for plain output.
pub fn wanted(json: bool, no_tui: bool) -> bool {
    let term = std::env::var("TERM").unwrap_or_default();
    !json
        && !no_tui
        && !crate::report::progress::quiet()
        && !term.is_empty()
        && term != "dumb"
        && std::io::stdout().is_terminal()
        && std::io::stderr().is_terminal()
}

/// Whether the live view holds the terminal (messages to stderr would land on it).
pub fn active() -> bool {
    ACTIVE.load(Ordering::SeqCst)
}

/// Gives the terminal back: raw mode off, the alternate screen left, the cursor
/// shown. Does nothing when the view is not active, so the panic hook, a second
/// signal and the view's own end may all call it.
pub fn leave() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = terminal::disable_raw_mode();
        let _ = execute!(
            std::io::stderr(),
            terminal::LeaveAlternateScreen,
            cursor::Show
        );
    }
}

/// [`leave`] for a signal handler: only async-signal-safe calls (an atomic swap,
/// tcsetattr(3) with the settings saved before raw mode, write(2) of the escape
/// sequences that leave the alternate screen and show the cursor).
pub fn leave_in_signal_handler() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        const SEQ: &[u8] = b"\x1b[?1049l\x1b[?25h";
        // SAFETY: tcsetattr and write are async-signal-safe; the termios was saved
        // before raw mode and is never changed; SEQ is a valid buffer.
        unsafe {
            if let Some(t) = SAVED.get() {
                libc::tcsetattr(2, libc::TCSANOW, t);
            }
            libc::write(2, SEQ.as_ptr().cast(), SEQ.len());
        }
    }
}

/// Keeps the terminal's settings (stderr's) before raw mode, once.
fn save_termios() {
    if SAVED.get().is_none() {
        // SAFETY: a zeroed termios is a valid out-parameter for tcgetattr.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: fd 2 and a valid, writable termios.
        if unsafe { libc::tcgetattr(2, &mut t) } == 0 {
            let _ = SAVED.set(t);
        }
    }
}

fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            leave();
            previous(info);
        }));
    });
}

type Term = Terminal<CrosstermBackend<BufWriter<Stderr>>>;

/// The switches every live view has, set by keys.
#[derive(Debug, Clone, PartialEq)]
pub struct Keys {
    /// The chart's right edge while paused (`p`): the second it froze at.
    pub paused_at: Option<u32>,
    /// The help overlay (`?`) is open.
    pub help: bool,
    /// Draw the max line (`m` hides it, so the percentiles use the whole height).
    pub show_max: bool,
    /// `q` / Ctrl-C was pressed (or a signal came): the run is winding down.
    pub stopping: bool,
}

impl Default for Keys {
    fn default() -> Keys {
        Keys {
            paused_at: None,
            help: false,
            show_max: true,
            stopping: false,
        }
    }
}

impl Keys {
    /// Pauses the chart's scroll at `newest` (the newest second drawn), or resumes it.
    pub fn toggle_pause(&mut self, newest: u32) {
        self.paused_at = match self.paused_at {
            Some(_) => None,
            None => Some(newest),
        };
    }
}

/// A live view's state: what it draws, and its key switches.
pub trait Screen: Send + 'static {
    /// Draws the whole view into `frame`.
    fn draw(&self, frame: &mut Frame);
    /// The key switches.
    fn keys(&mut self) -> &mut Keys;
    /// The newest second on the chart (where `p` pauses it).
    fn newest(&self) -> u32;
}

/// What stopping means for the command that runs the view.
pub struct Stopper {
    /// `q` and a first Ctrl-C: what Ctrl-C does as a signal (keep the run).
    pub stop: Box<dyn Fn() + Send>,
    /// Whether the run is stopping already (a signal came), to show it.
    pub stopped: Box<dyn Fn() -> bool + Send>,
    /// A second Ctrl-C: end the process at once, as a second signal does. Called
    /// after the terminal was given back.
    pub at_once: Box<dyn Fn() + Send>,
}

impl Stopper {
    /// `stop` for `q` and Ctrl-C, `stopped` read to show a signal's stop; a second
    /// Ctrl-C exits with 130.
    pub fn new(stop: Box<dyn Fn() + Send>, stopped: Arc<AtomicBool>) -> Stopper {
        Stopper {
            stop,
            stopped: Box::new(move || stopped.load(Ordering::Relaxed)),
            at_once: Box::new(|| {
                eprintln!("latscope: stopped at once (a second Ctrl-C)");
                std::process::exit(130);
            }),
        }
    }
}

/// A change to the state, run on the UI thread.
type Update<S> = Box<dyn FnOnce(&mut S) + Send>;

/// A running live view of state `S`. Feed it what the engine measured;
/// [`LiveView::finish`] (or dropping it) ends the view and restores the terminal.
pub struct LiveView<S: Screen = LiveState> {
    tx: Option<mpsc::Sender<Update<S>>>,
    thread: Option<JoinHandle<()>>,
}

impl<S: Screen> LiveView<S> {
    /// Takes the terminal (raw mode, alternate screen on stderr) and starts the UI
    /// thread on `state`.
    pub fn open(state: S, stopper: Stopper) -> std::io::Result<LiveView<S>> {
        install_panic_hook();
        save_termios();
        terminal::enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let term = (|| {
            execute!(
                std::io::stderr(),
                terminal::EnterAlternateScreen,
                cursor::Hide
            )?;
            let mut t = Terminal::new(CrosstermBackend::new(BufWriter::new(std::io::stderr())))?;
            t.clear()?;
            Ok::<_, std::io::Error>(t)
        })();
        let term = match term {
            Ok(t) => t,
            Err(e) => {
                leave();
                return Err(e);
            }
        };
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("latscope-live".into())
            .spawn(move || ui(term, state, rx, stopper));
        match thread {
            Ok(t) => Ok(LiveView {
                tx: Some(tx),
                thread: Some(t),
            }),
            Err(e) => {
                leave();
                Err(e)
            }
        }
    }

    /// Hands a change of the state to the UI thread (never blocks).
    pub fn update(&self, f: impl FnOnce(&mut S) + Send + 'static) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Box::new(f));
        }
    }

    /// Ends the view: the UI thread draws what it has and stops, and the terminal is
    /// restored.
    pub fn finish(mut self) {
        self.end();
    }

    fn end(&mut self) {
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        leave();
    }
}

impl LiveView<LiveState> {
    /// The load view of `setup`. `stop` is what Ctrl-C does (the command's stop
    /// flag); `stopped` is that flag, read to show "stopping" when a signal set it.
    pub fn start(
        setup: Setup,
        stop: Box<dyn Fn() + Send>,
        stopped: Arc<AtomicBool>,
    ) -> std::io::Result<LiveView<LiveState>> {
        LiveView::open(LiveState::new(setup), Stopper::new(stop, stopped))
    }

    /// Hands one progress report to the UI thread (never blocks).
    pub fn feed(&self, p: &Progress) {
        let p = p.clone();
        self.update(move |st| st.apply(&p));
    }

    /// Says that a ramp's next step (a new engine run) begins with `connections`.
    pub fn step(&self, connections: u32, number: usize, of: usize) {
        self.update(move |st| st.begin_step(connections, number, of));
    }
}

/// The live view as a run's observer: a step begins on the chart, every second is
/// drawn; messages are left to the line the command shows before and after the view.
impl crate::observe::Observer<Progress> for LiveView<LiveState> {
    fn step(&mut self, step: &crate::observe::Step) {
        if let (Some(c), Some(of)) = (step.connections, step.of) {
            LiveView::step(self, c, step.index + 1, of);
        }
    }

    fn second(&mut self, p: &Progress) {
        self.feed(p);
    }
}

impl<S: Screen> Drop for LiveView<S> {
    fn drop(&mut self) {
        self.end();
    }
}

/// The UI thread: fold updates into the state, draw at most every [`FRAME`], read
/// keys in between. Returns when the channel closes or the terminal was given back.
fn ui<S: Screen>(mut term: Term, mut st: S, rx: mpsc::Receiver<Update<S>>, stopper: Stopper) {
    // NO_COLOR (https://no-color.org): set and not empty means no colours.
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let mut dirty = true;
    let mut last_draw: Option<Instant> = None;
    loop {
        loop {
            match rx.try_recv() {
                Ok(f) => {
                    f(&mut st);
                    dirty = true;
                }
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => return,
            }
        }
        if !active() {
            return;
        }
        if !st.keys().stopping && (stopper.stopped)() {
            st.keys().stopping = true;
            dirty = true;
        }
        if dirty && last_draw.is_none_or(|t| t.elapsed() >= FRAME) {
            let drawn = term.draw(|f| {
                st.draw(f);
                if no_color {
                    for cell in f.buffer_mut().content.iter_mut() {
                        cell.fg = ratatui::style::Color::Reset;
                        cell.bg = ratatui::style::Color::Reset;
                    }
                }
            });
            if drawn.is_err() {
                return;
            }
            last_draw = Some(Instant::now());
            dirty = false;
        }
        let wait = if dirty {
            last_draw.map_or(Duration::ZERO, |t| FRAME.saturating_sub(t.elapsed()))
        } else {
            KEY_WAIT
        };
        match event::poll(wait.min(KEY_WAIT)) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(_) => return,
        }
        match event::read() {
            Ok(Event::Key(k)) if k.kind != KeyEventKind::Release => {
                let ctrl_c =
                    k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                let stopping = st.keys().stopping;
                match k.code {
                    _ if ctrl_c && stopping => {
                        // A second Ctrl-C, as a second signal: the user means it.
                        let _ = term.backend_mut().flush();
                        leave();
                        (stopper.at_once)();
                        return;
                    }
                    KeyCode::Char('q') | KeyCode::Char('Q') if !stopping => {
                        st.keys().stopping = true;
                        (stopper.stop)();
                    }
                    _ if ctrl_c => {
                        st.keys().stopping = true;
                        (stopper.stop)();
                    }
                    KeyCode::Char('p') | KeyCode::Char(' ') => {
                        let newest = st.newest();
                        st.keys().toggle_pause(newest);
                    }
                    KeyCode::Char('m') => {
                        let k = st.keys();
                        k.show_max = !k.show_max;
                    }
                    KeyCode::Char('?') | KeyCode::Char('h') => {
                        let k = st.keys();
                        k.help = !k.help;
                    }
                    KeyCode::Esc => st.keys().help = false,
                    _ => continue,
                }
                dirty = true;
            }
            Ok(Event::Resize(..)) => {
                let _ = term.autoresize();
                dirty = true;
            }
            Ok(_) => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `p` freezes the chart at the newest second and resumes it; the defaults show
    /// the max line, no help, not stopping.
    #[test]
    fn keys_pause_and_default() {
        let mut k = Keys::default();
        assert!(k.show_max && !k.help && !k.stopping && k.paused_at.is_none());
        k.toggle_pause(7);
        assert_eq!(k.paused_at, Some(7));
        k.toggle_pause(9);
        assert_eq!(k.paused_at, None);
    }
}
