//! Real PHP applications from Debian's packages for the stack tests (issue 32):
//! WordPress (`wordpress`, on MariaDB from `mariadb-server`) and DokuWiki
//! (`dokuwiki`), each run by a PHP-FPM (`php-fpm`) of the test's own on 127.0.0.1,
//! with its own config, data and session dirs — never the system services, which
//! need not be running (the packages install fine without systemd; their services
//! are not started). In front of them: nginx, Apache (mod_proxy_fcgi) or Caddy
//! (php_fastcgi) as the server, and Varnish, nginx proxy_cache or HAProxy as the
//! cache or edge (util_caches.rs has the caches).
//!
//! WordPress' Debian package reads its config from /etc/wordpress/config-NAME.php
//! (NAME from the `WORDPRESS_CONFIG` variable, which the FPM pool sets): the test
//! writes one named after its process and removes it when done. DokuWiki's reads
//! `DOKU_CONF`, which the pool's `auto_prepend_file` points at a copy of
//! /etc/dokuwiki whose `savedir` is a copy of the package's data dir.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::free_port;
use crate::util_caches::{spawn, temp_dir, Server};
use crate::util_require::{require, require_root};

/// An origin that claims nothing: no Server, no X-Powered-By, no generator; 20 KB of
/// HTML, no Cache-Control; it keeps every connection open, whatever the request's
/// `Connection` says. argv[1] adds a Set-Cookie of that name, argv[2] a `<meta
/// name="generator">` with that content.
pub const BARE: &str = r#"
import socket, sys, threading
cookie = sys.argv[1] if len(sys.argv) > 1 else ""
gen = sys.argv[2] if len(sys.argv) > 2 else ""
head = ('<head><meta name="generator" content="%s"></head>' % gen).encode() if gen else b""
body = b"<html>" + head + b"<body>" + b"<p>plain text that compresses well</p>" * 550 + b"</body></html>"
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(64)
print(s.getsockname()[1], flush=True)
def serve(c):
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                d = c.recv(65536)
                if not d:
                    return
                buf += d
            head, buf = buf.split(b"\r\n\r\n", 1)
            extra = ("Set-Cookie: %s=abc123; path=/\r\n" % cookie) if cookie else ""
            c.sendall(("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n%s\r\n"
                       % (len(body), extra)).encode() + body)
    finally:
        c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"#;

/// The PHP-FPM binary of Debian 12's php-fpm.
pub const PHP_FPM: &str = "php-fpm8.2";

/// A running PHP application: its FPM (and database), where its files are.
pub struct App {
    /// FastCGI on 127.0.0.1.
    pub fpm: Server,
    pub db: Option<Server>,
    /// The document root ("/usr/share/wordpress").
    pub root: &'static str,
    /// The front controller ("index.php", "doku.php").
    pub index: &'static str,
    _config: Option<RemoveOnDrop>,
}

/// A file removed on drop (the WordPress host config under /etc/wordpress).
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Whether the PHP applications' tests can run: root (php-fpm and mariadbd run as
/// root with `-R`/`--user=root`; WordPress' config lives in /etc/wordpress) and the
/// packages scripts/test.sh installs.
pub fn require_php_apps(wordpress: bool) -> bool {
    require_root()
        && require(PHP_FPM)
        && require("php")
        && require("nginx")
        && (!wordpress || (require("mariadbd") && require("mariadb-install-db")))
        && crate::util_require::require_that(
            Path::new(if wordpress {
                "/usr/share/wordpress/wp-load.php"
            } else {
                "/usr/share/dokuwiki/doku.php"
            })
            .exists(),
            if wordpress {
                "WordPress is not installed"
            } else {
                "DokuWiki is not installed"
            },
            if wordpress {
                "apt-get install wordpress mariadb-server php-fpm"
            } else {
                "apt-get install dokuwiki php-fpm"
            },
        )
}

/// PHP-FPM in `dir` on a free port: one static pool of 4 workers, sessions in
/// `dir/sessions`, `pool_extra` appended to the pool.
fn php_fpm(dir: PathBuf, pool_extra: &str) -> Server {
    let port = free_port();
    let d = dir.display();
    std::fs::create_dir_all(dir.join("sessions")).unwrap();
    let conf = format!(
        "[global]\npid = {d}/fpm.pid\nerror_log = {d}/fpm.log\ndaemonize = no\n\
         [app]\nlisten = 127.0.0.1:{port}\npm = static\npm.max_children = 4\n\
         clear_env = no\nphp_admin_value[session.save_path] = {d}/sessions\n{pool_extra}\n"
    );
    std::fs::write(dir.join("fpm.conf"), conf).unwrap();
    let mut cmd = Command::new(PHP_FPM);
    cmd.args(["-F", "-R", "-y"]).arg(dir.join("fpm.conf"));
    spawn(cmd, dir, port)
}

/// MariaDB on a free 127.0.0.1 port with a fresh data dir (grant tables skipped:
/// loopback only, for the test), and a `wp` database.
fn mariadb() -> Server {
    let dir = temp_dir("mariadb");
    let data = dir.join("data");
    let out = Command::new("mariadb-install-db")
        .args(["--no-defaults", "--user=root", "--skip-test-db"])
        .arg(format!("--datadir={}", data.display()))
        .output()
        .expect("mariadb-install-db runs");
    assert!(
        out.status.success(),
        "mariadb-install-db: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let port = free_port();
    let mut cmd = Command::new("mariadbd");
    cmd.arg("--no-defaults")
        .arg(format!("--datadir={}", data.display()))
        .arg(format!("--socket={}", dir.join("my.sock").display()))
        .arg(format!("--pid-file={}", dir.join("my.pid").display()))
        .args([
            &format!("--port={port}"),
            "--bind-address=127.0.0.1",
            "--user=root",
            "--skip-grant-tables",
            "--skip-log-bin",
            "--innodb-buffer-pool-size=32M",
        ]);
    let db = spawn(cmd, dir, port);
    let out = Command::new("mariadb")
        .args(["--no-defaults", "-h", "127.0.0.1", "-P", &port.to_string()])
        .args(["-e", "CREATE DATABASE wp"])
        .output()
        .expect("mariadb runs");
    assert!(
        out.status.success(),
        "CREATE DATABASE: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    db
}

/// WordPress installed on a fresh MariaDB ("latscope" site, no mail sent), served by
/// its own PHP-FPM. None when the tools are missing (see [`require_php_apps`]).
pub fn wordpress() -> Option<App> {
    if !require_php_apps(true) {
        return None;
    }
    let db = mariadb();
    let name = format!("latscope-{}", std::process::id());
    let config = PathBuf::from(format!("/etc/wordpress/config-{name}.php"));
    std::fs::write(
        &config,
        format!(
            "<?php\ndefine('DB_NAME', 'wp');\ndefine('DB_USER', 'root');\n\
             define('DB_PASSWORD', '');\ndefine('DB_HOST', '127.0.0.1:{}');\n\
             $latscope_host = isset($_SERVER['HTTP_HOST']) ? $_SERVER['HTTP_HOST'] : '127.0.0.1';\n\
             define('WP_HOME', 'http://' . $latscope_host);\n\
             define('WP_SITEURL', 'http://' . $latscope_host);\n",
            db.port
        ),
    )
    .unwrap();
    let config = RemoveOnDrop(config);
    let dir = temp_dir("wordpress");
    let install = dir.join("install.php");
    std::fs::write(
        &install,
        "<?php\ndefine('WP_INSTALLING', true);\n$_SERVER['HTTP_HOST'] = '127.0.0.1';\n\
         function wp_new_blog_notification() {}\n\
         require '/usr/share/wordpress/wp-load.php';\n\
         require ABSPATH . 'wp-admin/includes/upgrade.php';\n\
         wp_install('latscope', 'admin', 'admin@example.org', true, '', 'not-a-secret-1');\n\
         echo \"installed\\n\";\n",
    )
    .unwrap();
    let out = Command::new("php")
        .arg(&install)
        .env("WORDPRESS_CONFIG", &name)
        .output()
        .expect("php runs");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("installed"),
        "wp_install: {} {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let fpm = php_fpm(dir, &format!("env[WORDPRESS_CONFIG] = {name}\n"));
    Some(App {
        fpm,
        db: Some(db),
        root: "/usr/share/wordpress",
        index: "index.php",
        _config: Some(config),
    })
}

/// Copies the files of `from` into `to` (recursively).
fn copy_dir(from: &Path, to: &Path) {
    let out = Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", from.display()))
        .arg(to)
        .output()
        .unwrap();
    assert!(out.status.success(), "cp {}: {out:?}", from.display());
}

/// DokuWiki with a copy of the package's config and data, served by its own PHP-FPM.
pub fn dokuwiki() -> Option<App> {
    if !require_php_apps(false) {
        return None;
    }
    let dir = temp_dir("dokuwiki");
    let (conf, data) = (dir.join("conf"), dir.join("data"));
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    copy_dir(Path::new("/etc/dokuwiki"), &conf);
    copy_dir(Path::new("/var/lib/dokuwiki/data"), &data);
    let local = conf.join("local.php");
    let mut text = std::fs::read_to_string(&local).unwrap_or_else(|_| "<?php\n".into());
    text.push_str(&format!("\n$conf['savedir'] = '{}';\n", data.display()));
    std::fs::write(&local, text).unwrap();
    let prepend = dir.join("prepend.php");
    std::fs::write(
        &prepend,
        format!("<?php\ndefine('DOKU_CONF', '{}/');\n", conf.display()),
    )
    .unwrap();
    let fpm = php_fpm(
        dir,
        &format!(
            "php_admin_value[auto_prepend_file] = {}\n",
            prepend.display()
        ),
    );
    Some(App {
        fpm,
        db: None,
        root: "/usr/share/dokuwiki",
        index: "doku.php",
        _config: None,
    })
}

/// nginx serving `app` through FastCGI (no gzip, no cache), `extra` inside `server {}`.
pub fn nginx_fcgi(app: &App, extra: &str) -> Server {
    let dir = temp_dir("stack-nginx");
    let port = free_port();
    let d = dir.display();
    let conf = format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
         error_log {d}/error.log;\nevents {{ worker_connections 128; }}\n\
         http {{\n access_log off;\n include /etc/nginx/mime.types;\n\
         client_body_temp_path {d}/body;\n proxy_temp_path {d}/proxy;\n\
         fastcgi_temp_path {d}/fcgi;\n uwsgi_temp_path {d}/uwsgi;\n scgi_temp_path {d}/scgi;\n\
         server {{\n  listen 127.0.0.1:{port};\n  root {root};\n  index {index};\n{extra}\n\
         location / {{ try_files $uri $uri/ /{index}?$args; }}\n\
         location ~ \\.php$ {{\n   include /etc/nginx/fastcgi_params;\n\
         fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;\n\
         fastcgi_pass 127.0.0.1:{fpm};\n  }}\n }}\n}}\n",
        root = app.root,
        index = app.index,
        fpm = app.fpm.port,
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let mut cmd = Command::new("nginx");
    cmd.arg("-c")
        .arg(dir.join("nginx.conf"))
        .arg("-p")
        .arg(&dir);
    spawn(cmd, dir, port)
}

/// Apache 2.4 (mpm_event) serving `app` through mod_proxy_fcgi, no mod_deflate.
pub fn apache_fcgi(app: &App) -> Server {
    let dir = temp_dir("stack-apache");
    let port = free_port();
    let d = dir.display();
    let m = "/usr/lib/apache2/modules";
    let conf = format!(
        "ServerRoot {d}\nServerName 127.0.0.1\nListen 127.0.0.1:{port}\nPidFile {d}/httpd.pid\n\
         ErrorLog {d}/error.log\nLogLevel warn\nUser nobody\nGroup nogroup\n\
         LoadModule mpm_event_module {m}/mod_mpm_event.so\n\
         LoadModule authz_core_module {m}/mod_authz_core.so\n\
         LoadModule dir_module {m}/mod_dir.so\n\
         LoadModule mime_module {m}/mod_mime.so\n\
         LoadModule proxy_module {m}/mod_proxy.so\n\
         LoadModule proxy_fcgi_module {m}/mod_proxy_fcgi.so\n\
         TypesConfig /etc/mime.types\n\
         DocumentRoot {root}\n<Directory {root}>\n AllowOverride None\n Require all granted\n</Directory>\n\
         DirectoryIndex {index}\n\
         <FilesMatch \"\\.php$\">\n SetHandler \"proxy:fcgi://127.0.0.1:{fpm}\"\n</FilesMatch>\n",
        root = app.root,
        index = app.index,
        fpm = app.fpm.port,
    );
    std::fs::write(dir.join("httpd.conf"), conf).unwrap();
    let mut cmd = Command::new("apache2");
    cmd.arg("-X").arg("-f").arg(dir.join("httpd.conf"));
    spawn(cmd, dir, port)
}

/// Caddy serving `app` with `php_fastcgi` on plain http (no `encode`).
pub fn caddy_fcgi(app: &App) -> Server {
    let dir = temp_dir("stack-caddy");
    let port = free_port();
    let d = dir.display();
    let conf = format!(
        "{{\n\tadmin off\n\tauto_https off\n\tstorage file_system {d}/data\n}}\n\
         http://127.0.0.1:{port} {{\n\tbind 127.0.0.1\n\troot * {root}\n\t\
         php_fastcgi 127.0.0.1:{fpm} {{\n\t\tindex {index}\n\t}}\n\tfile_server\n}}\n",
        root = app.root,
        index = app.index,
        fpm = app.fpm.port,
    );
    std::fs::write(dir.join("Caddyfile"), conf).unwrap();
    let mut cmd = Command::new("caddy");
    cmd.args(["run", "--adapter", "caddyfile", "--config"])
        .arg(dir.join("Caddyfile"))
        .env("HOME", &dir)
        .env("XDG_DATA_HOME", dir.join("xdg-data"))
        .env("XDG_CONFIG_HOME", dir.join("xdg-config"));
    spawn(cmd, dir, port)
}

/// HAProxy 2 in HTTP mode in front of `backend`, `extra` in its `defaults`.
pub fn haproxy(backend: u16, extra: &str) -> Server {
    let dir = temp_dir("stack-haproxy");
    let port = free_port();
    let conf = format!(
        "global\n  maxconn 256\n  pidfile {d}/haproxy.pid\n\
         defaults\n  mode http\n  timeout connect 5s\n  timeout client 20s\n  \
         timeout server 20s\n{extra}\n\
         frontend fe\n  bind 127.0.0.1:{port}\n  default_backend be\n\
         backend be\n  server app 127.0.0.1:{backend}\n",
        d = dir.display()
    );
    std::fs::write(dir.join("haproxy.cfg"), conf).unwrap();
    let mut cmd = Command::new("haproxy");
    cmd.arg("-db").arg("-f").arg(dir.join("haproxy.cfg"));
    spawn(cmd, dir, port)
}

/// The advice entries of finding `id` in a diagnose JSON: (stack, topic, advice).
pub fn stack_advice(doc: &serde_json::Value, id: &str) -> Vec<(String, String, String)> {
    let s = |v: &serde_json::Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == id)
        .flat_map(|f| f["advice_stack"].as_array().cloned().unwrap_or_default())
        .map(|a| (s(&a, "stack"), s(&a, "topic"), s(&a, "advice")))
        .collect()
}

/// The finding `id` of a diagnose JSON (panics with the ids when it is missing).
pub fn finding<'a>(doc: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    let all = doc["findings"].as_array().unwrap();
    all.iter().find(|f| f["id"] == id).unwrap_or_else(|| {
        let ids: Vec<_> = all.iter().map(|f| f["id"].to_string()).collect();
        panic!("no {id} among {ids:?}")
    })
}

/// The id of the component in `role` of the diagnose JSON's stack ("" when none).
pub fn role(doc: &serde_json::Value, role: &str) -> String {
    doc["stack"][role]["id"].as_str().unwrap_or("").to_string()
}

/// nginx as a reverse proxy to `origin` (no gzip, no cache), `extra` in `http {}`.
pub fn nginx_proxy(origin: u16, extra: &str) -> Server {
    let dir = temp_dir("stack-nginx-proxy");
    let port = free_port();
    let d = dir.display();
    let conf = format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
         error_log {d}/error.log;\nevents {{ worker_connections 128; }}\n\
         http {{\n access_log off;\n client_body_temp_path {d}/body;\n proxy_temp_path {d}/proxy;\n\
         fastcgi_temp_path {d}/fcgi;\n uwsgi_temp_path {d}/uwsgi;\n scgi_temp_path {d}/scgi;\n\
         {extra}\n server {{\n  listen 127.0.0.1:{port};\n\
         location / {{ proxy_pass http://127.0.0.1:{origin}; }}\n }}\n}}\n"
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let mut cmd = Command::new("nginx");
    cmd.arg("-c")
        .arg(dir.join("nginx.conf"))
        .arg("-p")
        .arg(&dir);
    spawn(cmd, dir, port)
}

/// Caddy as a reverse proxy to `origin` on plain http, `extra` in the site block.
pub fn caddy_proxy(origin: u16, extra: &str) -> Server {
    let dir = temp_dir("stack-caddy-proxy");
    let port = free_port();
    let d = dir.display();
    let conf = format!(
        "{{\n\tadmin off\n\tauto_https off\n\tstorage file_system {d}/data\n}}\n\
         http://127.0.0.1:{port} {{\n\tbind 127.0.0.1\n\t{extra}\n\t\
         reverse_proxy 127.0.0.1:{origin}\n}}\n"
    );
    std::fs::write(dir.join("Caddyfile"), conf).unwrap();
    let mut cmd = Command::new("caddy");
    cmd.args(["run", "--adapter", "caddyfile", "--config"])
        .arg(dir.join("Caddyfile"))
        .env("HOME", &dir)
        .env("XDG_DATA_HOME", dir.join("xdg-data"))
        .env("XDG_CONFIG_HOME", dir.join("xdg-config"));
    spawn(cmd, dir, port)
}

/// Varnish in front of `origin` with the built-in VCL plus `backend_response` inside
/// `vcl_backend_response` (which then falls through to the built-in one).
pub fn varnish_vcl(origin: u16, backend_response: &str) -> Server {
    let dir = temp_dir("stack-varnish");
    let port = free_port();
    let vcl = dir.join("default.vcl");
    std::fs::write(
        &vcl,
        format!(
            "vcl 4.1;\nbackend default {{ .host = \"127.0.0.1\"; .port = \"{origin}\"; }}\n\
             sub vcl_backend_response {{\n  {backend_response}\n}}\n"
        ),
    )
    .unwrap();
    let mut cmd = Command::new("varnishd");
    cmd.arg("-F")
        .args(["-a", &format!("127.0.0.1:{port}")])
        .arg("-f")
        .arg(&vcl)
        .arg("-n")
        .arg(dir.join("work"))
        .args(["-s", "malloc,32m"]);
    spawn(cmd, dir, port)
}

/// Every `advice_stack` entry of the diagnose JSON comes from a component the stack
/// names, in the role it plays there (no advice for a stack that is not there).
pub fn advice_only_for_detected(doc: &serde_json::Value) {
    for f in doc["findings"].as_array().unwrap() {
        for a in f["advice_stack"].as_array().into_iter().flatten() {
            let r = a["role"].as_str().unwrap();
            assert_eq!(
                doc["stack"][r]["id"], a["stack"],
                "{}: advice from a stack not detected in that role: {a}\n{}",
                f["id"], doc["stack"]
            );
        }
    }
}
