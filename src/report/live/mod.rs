//! The full-screen live view of a load run (ratatui on crossterm): the engine's
//! once-a-second [`Progress`] goes over a channel to a UI thread that owns the
//! terminal, folds it into a [`LiveState`] and redraws at most 4 times a second,
//! reading keys in between (`q`/Ctrl-C stop the run as Ctrl-C always did, `p` pauses
//! the chart, `m` hides the max line, `?` help). Raw mode turns Ctrl-C into a key,
//! so it is mapped to the same stop. The terminal is restored when the view ends, on
//! a panic (a hook), and before a second signal ends the process; the command then
//! prints its usual text summary into the restored scrollback.
//!
//! Presentation only: the view reads what the engine measured and never measures.

pub mod state;
pub mod view;

use std::io::{BufWriter, IsTerminal, Stderr, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Once};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::{cursor, execute, terminal};
use ratatui::Terminal;

pub use state::{LiveState, Setup};

use crate::load::Progress;

/// The shortest time between two frames (at most 4 per second).
pub const FRAME: Duration = Duration::from_millis(250);
/// How long the UI thread waits for a key before it looks at the channel again.
const KEY_WAIT: Duration = Duration::from_millis(100);

/// Whether the terminal is in the view's mode (raw, alternate screen) right now.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Whether a run should get the live view: stdout and stderr are terminals, TERM is
/// set and not `dumb`, and neither `--json` nor `--no-tui` asked for plain output.
pub fn wanted(json: bool, no_tui: bool) -> bool {
    let term = std::env::var("TERM").unwrap_or_default();
    !json
        && !no_tui
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

/// What the UI thread is told.
enum Msg {
    Progress(Box<Progress>),
    /// A ramp's next step begins: connections, its number (from 1), of how many.
    Step(u32, usize, usize),
}

/// A running live view. Feed it the engine's progress; [`LiveView::finish`] (or
/// dropping it) ends the view and restores the terminal.
pub struct LiveView {
    tx: Option<mpsc::Sender<Msg>>,
    thread: Option<JoinHandle<()>>,
}

impl LiveView {
    /// Takes the terminal (raw mode, alternate screen on stderr) and starts the UI
    /// thread. `stop` is what Ctrl-C does (the command's stop flag); `stopped` is
    /// that flag, read to show "stopping" when a signal set it.
    pub fn start(
        setup: Setup,
        stop: Box<dyn Fn() + Send>,
        stopped: Arc<AtomicBool>,
    ) -> std::io::Result<LiveView> {
        install_panic_hook();
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
        let state = LiveState::new(setup);
        let thread = std::thread::Builder::new()
            .name("latscope-live".into())
            .spawn(move || ui(term, state, rx, stop, stopped));
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

    /// Hands one progress report to the UI thread (never blocks).
    pub fn feed(&self, p: &Progress) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Msg::Progress(Box::new(p.clone())));
        }
    }

    /// Says that a ramp's next step (a new engine run) begins with `connections`.
    pub fn step(&self, connections: u32, number: usize, of: usize) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Msg::Step(connections, number, of));
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

impl Drop for LiveView {
    fn drop(&mut self) {
        self.end();
    }
}

/// The UI thread: fold progress into the state, draw at most every [`FRAME`], read
/// keys in between. Returns when the channel closes or the terminal was given back.
fn ui(
    mut term: Term,
    mut st: LiveState,
    rx: mpsc::Receiver<Msg>,
    stop: Box<dyn Fn() + Send>,
    stopped: Arc<AtomicBool>,
) {
    // NO_COLOR (https://no-color.org): set and not empty means no colours.
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let mut dirty = true;
    let mut last_draw: Option<Instant> = None;
    loop {
        loop {
            match rx.try_recv() {
                Ok(Msg::Progress(p)) => {
                    st.apply(&p);
                    dirty = true;
                }
                Ok(Msg::Step(c, i, n)) => {
                    st.begin_step(c, i, n);
                    dirty = true;
                }
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => return,
            }
        }
        if !active() {
            return;
        }
        if !st.stopping && stopped.load(Ordering::Relaxed) {
            st.stopping = true;
            dirty = true;
        }
        if dirty && last_draw.is_none_or(|t| t.elapsed() >= FRAME) {
            let drawn = term.draw(|f| {
                view::draw(f, &st);
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
                match k.code {
                    _ if ctrl_c && st.stopping => {
                        // A second Ctrl-C, as a second signal: the user means it.
                        let _ = term.backend_mut().flush();
                        leave();
                        eprintln!("latscope: stopped at once (a second Ctrl-C)");
                        std::process::exit(130);
                    }
                    KeyCode::Char('q') | KeyCode::Char('Q') if !st.stopping => {
                        st.stopping = true;
                        stop();
                    }
                    _ if ctrl_c => {
                        st.stopping = true;
                        stop();
                    }
                    KeyCode::Char('p') | KeyCode::Char(' ') => st.toggle_pause(),
                    KeyCode::Char('m') => st.show_max = !st.show_max,
                    KeyCode::Char('?') | KeyCode::Char('h') => st.help = !st.help,
                    KeyCode::Esc => st.help = false,
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
