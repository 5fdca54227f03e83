//! The lab's routes: each request is counted, passes the server-wide gate (workers,
//! capacity, stalls — except `/__lab/stats`), and is answered by the route its first
//! path segment names. Bad parameters get a 400 with a message, unknown paths a 404.

use std::convert::Infallible;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use http::header::{self, HeaderValue};
use http::request::Parts;
use http::{Request, Response, StatusCode, Version};
use http_body_util::BodyExt;
use tokio::time::Instant;

use super::body::{random_chunk, text_chunk, LabBody};
use super::cache;
use super::gate::Rejected;
use super::server::{App, ConnCtl};
use super::stats::Family;
use crate::units;

/// A lab response.
pub(crate) type Resp = Response<LabBody>;

/// The longest `/delay` the lab accepts.
const MAX_DELAY: Duration = Duration::from_secs(600);
/// The largest `/bytes` or plain `/text` body.
const MAX_BYTES: u64 = 64 << 30;
/// The largest gzipped `/text` body (compressed in memory).
const MAX_GZIP_TEXT: u64 = 64 << 20;
/// The longest `/redirect` chain.
const MAX_REDIRECTS: u32 = 100;

/// The path of the counters route.
pub(crate) const STATS_PATH: &str = "/__lab/stats";

/// Answers one request. The body type is hyper's over TCP and an already-read one
/// over HTTP/3: the routes see only the head.
pub(crate) async fn handle<B>(
    req: Request<B>,
    app: Arc<App>,
    ctl: Arc<ConnCtl>,
) -> Result<Resp, Infallible>
where
    B: hyper::body::Body + Unpin,
{
    let (parts, body) = req.into_parts();
    // Read (and drop) any request body, so uploads don't stall the connection.
    let mut body = body;
    while let Some(frame) = body.frame().await {
        if frame.is_err() {
            break;
        }
    }
    let path = parts.uri.path().to_string();
    if path == STATS_PATH {
        let json = serde_json::to_vec(&app.counters.snapshot()).unwrap_or_default();
        return Ok(with_type(
            StatusCode::OK,
            "application/json",
            LabBody::full(json),
        ));
    }
    let family = Family::of(&path);
    app.counters.request(family);
    let ticket = match app.gate.admit().await {
        Ok(t) => t,
        Err(why) => {
            app.counters.rejected();
            return Ok(overloaded(why));
        }
    };
    let arg = path
        .trim_start_matches('/')
        .split_once('/')
        .map(|(_, rest)| rest);
    let mut resp = route(family, arg, &parts, &app, &ctl).await;
    app.gate.hold_for_stall().await;
    resp.body_mut().hold(ticket);
    Ok(resp)
}

/// Dispatches to a route. `arg` is what follows the first path segment and its slash.
async fn route(family: Family, arg: Option<&str>, parts: &Parts, app: &App, ctl: &ConnCtl) -> Resp {
    let no_arg = arg.is_none_or(str::is_empty);
    let arg = arg.unwrap_or("");
    match family {
        Family::Index if no_arg => index(),
        Family::Delay => delay(arg).await,
        Family::Bytes => bytes(arg),
        Family::Cold if no_arg => cold(app).await,
        Family::Cache => cache::cache(arg, parts, app),
        Family::Close if no_arg => close(parts, ctl),
        Family::Status => status(arg),
        Family::Reset if no_arg => reset(ctl).await,
        Family::Cdn => cache::cdn(arg, app).await,
        Family::ServerTiming if no_arg => server_timing(parts).await,
        Family::Redirect => redirect(arg),
        Family::Text => text(arg, parts).await,
        _ => not_found(parts.uri.path()),
    }
}

/// A response with a content type.
pub(crate) fn with_type(status: StatusCode, content_type: &'static str, body: LabBody) -> Resp {
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

/// A plain-text response; a newline is added.
pub(crate) fn plain(status: StatusCode, message: impl Into<String>) -> Resp {
    let mut text = message.into();
    text.push('\n');
    with_type(status, "text/plain; charset=utf-8", LabBody::full(text))
}

/// 400 with a message saying what was wrong.
pub(crate) fn bad_request(message: impl Into<String>) -> Resp {
    plain(StatusCode::BAD_REQUEST, message)
}

/// The value of query parameter `key`, if present.
pub(crate) fn query<'a>(parts: &'a Parts, key: &str) -> Option<&'a str> {
    parts.uri.query()?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == key).then_some(v)
    })
}

/// Sets a header from a string we built (never fails for the values the lab makes).
pub(crate) fn set(resp: &mut Resp, name: header::HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        resp.headers_mut().insert(name, v);
    }
}

/// Milliseconds with one decimal, as Server-Timing writes them.
pub(crate) fn dur_ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

fn overloaded(why: Rejected) -> Resp {
    let msg = match why {
        Rejected::Workers => "overloaded: every worker is busy (--workers, --overload 503)",
        Rejected::Capacity => "overloaded: the request queue is full (--capacity, --overload 503)",
    };
    let mut resp = plain(StatusCode::SERVICE_UNAVAILABLE, msg);
    set(&mut resp, header::RETRY_AFTER, "1");
    resp
}

fn not_found(path: &str) -> Resp {
    plain(
        StatusCode::NOT_FOUND,
        format!("no such lab route: {path} (GET / lists them)"),
    )
}

fn index() -> Resp {
    const INDEX: &str = "\
latscope lab: routes that each reproduce one latency story

/delay/{dur}          answer after DUR (e.g. /delay/20ms)
/bytes/{size}         SIZE bytes of incompressible data, streamed (e.g. /bytes/10MB)
/text/{size}          SIZE bytes of compressible text; gzip with ?gzip=1 if accepted
/cold                 slow on the first request after start or idle (--cold, --cold-after)
/cache/public         cacheable: public, max-age, s-maxage, ETag, Last-Modified, 304s
/cache/private-cookie private, and a Set-Cookie on every response
/cache/no-validators  no-cache, no ETag or Last-Modified: never a 304
/cache/no-304         ETag and Last-Modified, but conditional GETs get a full 200
/cdn/{hit|miss|dynamic}  CDN-style headers; miss and dynamic pay an origin fetch
/server-timing        spends db and app time and reports it (?db=15ms&app=5ms)
/redirect/{n}         a chain of n 302 redirects down to /redirect/0
/status/{code}        answers with that status (200..599)
/close                Connection: close, then the server closes
/reset                the server resets the connection (TCP RST)
/__lab/stats          request counters (JSON)
";
    plain(StatusCode::OK, INDEX.trim_end())
}

async fn delay(arg: &str) -> Resp {
    let d = match units::parse_duration(arg) {
        Ok(d) => d,
        Err(e) => return bad_request(format!("/delay/{{dur}}: {e}")),
    };
    if d > MAX_DELAY {
        return bad_request(format!("/delay/{arg}: at most 10m"));
    }
    tokio::time::sleep(d).await;
    plain(StatusCode::OK, format!("delayed {arg}"))
}

/// A size parameter, or the message of a 400.
fn parse_size(route: &str, arg: &str, max: u64) -> Result<u64, String> {
    match units::parse_size(arg) {
        Ok(n) if n <= max => Ok(n),
        Ok(_) => Err(format!("/{route}/{arg}: at most {}", units::fmt_bytes(max))),
        Err(e) => Err(format!("/{route}/{{size}}: {e}")),
    }
}

fn bytes(arg: &str) -> Resp {
    let n = match parse_size("bytes", arg, MAX_BYTES) {
        Ok(n) => n,
        Err(msg) => return bad_request(msg),
    };
    let mut resp = with_type(
        StatusCode::OK,
        "application/octet-stream",
        LabBody::repeat(random_chunk(), n),
    );
    set(&mut resp, header::CONTENT_LENGTH, &n.to_string());
    resp
}

/// Whether the request's Accept-Encoding allows gzip (a `q=0` refuses it).
fn accepts_gzip(parts: &Parts) -> bool {
    let mut star = false;
    for value in parts.headers.get_all(header::ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let mut fields = item.split(';');
            let coding = fields.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = fields
                .filter_map(|f| f.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f64>().ok())
                .unwrap_or(1.0);
            match coding.as_str() {
                "gzip" | "x-gzip" => return q > 0.0,
                "*" => star = q > 0.0,
                _ => {}
            }
        }
    }
    star
}

async fn text(arg: &str, parts: &Parts) -> Resp {
    let want_gzip = query(parts, "gzip") == Some("1");
    let gzip = want_gzip && accepts_gzip(parts);
    let max = if gzip { MAX_GZIP_TEXT } else { MAX_BYTES };
    let n = match parse_size("text", arg, max) {
        Ok(n) => n,
        Err(msg) => return bad_request(msg),
    };
    let mut resp = if gzip {
        // Compressing megabytes takes a while: keep it off the async workers.
        let data = tokio::task::spawn_blocking(move || gzip_text(n))
            .await
            .unwrap_or_default();
        let len = data.len();
        let mut resp = with_type(
            StatusCode::OK,
            "text/plain; charset=utf-8",
            LabBody::full(data),
        );
        set(&mut resp, header::CONTENT_ENCODING, "gzip");
        set(&mut resp, header::CONTENT_LENGTH, &len.to_string());
        resp
    } else {
        let mut resp = with_type(
            StatusCode::OK,
            "text/plain; charset=utf-8",
            LabBody::repeat(text_chunk(), n),
        );
        set(&mut resp, header::CONTENT_LENGTH, &n.to_string());
        resp
    };
    if want_gzip {
        // The answer depends on Accept-Encoding: tell caches so.
        set(&mut resp, header::VARY, "Accept-Encoding");
    }
    resp
}

/// `n` bytes of the lab's text, gzipped.
fn gzip_text(n: u64) -> Vec<u8> {
    let chunk = text_chunk();
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut left = n;
    while left > 0 {
        let k = left.min(chunk.len() as u64) as usize;
        // Writing into a Vec cannot fail.
        let _ = enc.write_all(&chunk[..k]);
        left -= k as u64;
    }
    enc.finish().unwrap_or_default()
}

async fn cold(app: &App) -> Resp {
    let waited = app.cold.enter().await;
    let state = if waited.is_zero() { "warm" } else { "cold" };
    let mut resp = plain(
        StatusCode::OK,
        format!("{state} (waited {} ms for warm-up)", dur_ms(waited)),
    );
    set(
        &mut resp,
        header::HeaderName::from_static("x-lab-cold"),
        state,
    );
    set(
        &mut resp,
        header::HeaderName::from_static("server-timing"),
        &format!("warmup;dur={}", dur_ms(waited)),
    );
    resp
}

fn close(parts: &Parts, ctl: &ConnCtl) -> Resp {
    ctl.request_close();
    let mut resp = plain(StatusCode::OK, "this connection closes after this response");
    if parts.version < Version::HTTP_2 {
        set(&mut resp, header::CONNECTION, "close");
    }
    resp
}

async fn reset(ctl: &ConnCtl) -> Resp {
    ctl.request_reset();
    // The connection task resets the socket and drops this request; wait for it.
    ctl.closed().await;
    plain(
        StatusCode::INTERNAL_SERVER_ERROR,
        "the reset did not happen",
    )
}

fn status(arg: &str) -> Resp {
    let code: u16 = match arg.parse() {
        Ok(c) => c,
        Err(_) => return bad_request(format!("/status/{arg}: give a status code, 200..599")),
    };
    if (100..200).contains(&code) {
        return bad_request(format!(
            "/status/{code}: a 1xx status cannot be a final response"
        ));
    }
    let Ok(status) = StatusCode::from_u16(code) else {
        return bad_request(format!("/status/{arg}: give a status code, 200..599"));
    };
    if !(200..600).contains(&code) {
        return bad_request(format!("/status/{arg}: give a status code, 200..599"));
    }
    if matches!(code, 204 | 304) {
        let mut resp = Response::new(LabBody::empty());
        *resp.status_mut() = status;
        return resp;
    }
    plain(status, format!("status {code}"))
}

fn redirect(arg: &str) -> Resp {
    let n: u32 = match arg.parse() {
        Ok(n) if n <= MAX_REDIRECTS => n,
        Ok(_) => return bad_request(format!("/redirect/{arg}: at most {MAX_REDIRECTS}")),
        Err(_) => return bad_request(format!("/redirect/{arg}: give a count, e.g. /redirect/3")),
    };
    if n == 0 {
        return plain(StatusCode::OK, "end of the redirect chain");
    }
    let mut resp = plain(StatusCode::FOUND, format!("{n} redirects to go"));
    set(&mut resp, header::LOCATION, &format!("/redirect/{}", n - 1));
    resp
}

async fn server_timing(parts: &Parts) -> Resp {
    let param = |key: &str, default: Duration| -> Result<Duration, String> {
        match query(parts, key) {
            None => Ok(default),
            Some(v) => match units::parse_duration(v) {
                Ok(d) if d <= Duration::from_secs(60) => Ok(d),
                Ok(_) => Err(format!("/server-timing?{key}={v}: at most 60s")),
                Err(e) => Err(format!("/server-timing?{key}=: {e}")),
            },
        }
    };
    let (db, app) = match (
        param("db", Duration::from_millis(15)),
        param("app", Duration::from_millis(5)),
    ) {
        (Ok(db), Ok(app)) => (db, app),
        (Err(msg), _) | (_, Err(msg)) => return bad_request(msg),
    };
    let t0 = Instant::now();
    tokio::time::sleep(db).await;
    let t1 = Instant::now();
    tokio::time::sleep(app).await;
    let t2 = Instant::now();
    let mut resp = plain(StatusCode::OK, "timed");
    set(
        &mut resp,
        header::HeaderName::from_static("server-timing"),
        &format!(
            "db;dur={};desc=\"database\", app;dur={};desc=\"application\", total;dur={}",
            dur_ms(t1 - t0),
            dur_ms(t2 - t1),
            dur_ms(t2 - t0)
        ),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(uri: &str, headers: &[(&str, &str)]) -> Parts {
        let mut b = Request::builder().uri(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    #[test]
    fn gzip_acceptance_follows_q_values() {
        assert!(accepts_gzip(&parts(
            "/",
            &[("accept-encoding", "gzip, br")]
        )));
        assert!(accepts_gzip(&parts("/", &[("accept-encoding", "*")])));
        assert!(!accepts_gzip(&parts(
            "/",
            &[("accept-encoding", "gzip;q=0")]
        )));
        assert!(!accepts_gzip(&parts("/", &[("accept-encoding", "br")])));
        assert!(!accepts_gzip(&parts("/", &[])));
    }

    #[test]
    fn query_finds_keys() {
        let p = parts("/text/1k?x=2&gzip=1", &[]);
        assert_eq!(query(&p, "gzip"), Some("1"));
        assert_eq!(query(&p, "y"), None);
    }

    #[test]
    fn bad_parameters_are_400() {
        assert_eq!(status("abc").status(), 400);
        assert_eq!(status("100").status(), 400);
        assert_eq!(status("600").status(), 400);
        assert_eq!(status("418").status(), 418);
        assert_eq!(redirect("x").status(), 400);
        assert_eq!(redirect("101").status(), 400);
        assert_eq!(redirect("2").status(), 302);
        assert_eq!(bytes("lots").status(), 400);
        assert_eq!(bytes("1000G").status(), 400);
    }
}
