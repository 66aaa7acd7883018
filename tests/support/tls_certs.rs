//! Certificates made at test time with `openssl`: a CA, a server
//! certificate for `localhost` and `127.0.0.1`, and a client certificate,
//! all signed by the CA (EC P-256, valid two days).
#![allow(dead_code)]

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the PEM files are.
#[derive(Clone, Debug)]
pub(crate) struct TlsFiles {
    pub(crate) ca: PathBuf,
    pub(crate) server_cert: PathBuf,
    pub(crate) server_key: PathBuf,
    pub(crate) client_cert: PathBuf,
    pub(crate) client_key: PathBuf,
}

impl TlsFiles {
    /// A file's bytes.
    pub(crate) fn read(path: &Path) -> Vec<u8> {
        std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
    }
}

/// Makes the certificates in `dir` (created if missing).
#[track_caller]
pub(crate) fn make(dir: &Path) -> TlsFiles {
    std::fs::create_dir_all(dir).expect("certificate dir");
    let f = |name: &str| dir.join(name);
    let key = |path: &PathBuf| {
        openssl(&[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            &s(path),
        ])
    };
    key(&f("ca.key"));
    openssl(&[
        "req",
        "-x509",
        "-new",
        "-key",
        &s(&f("ca.key")),
        "-days",
        "2",
        "-subj",
        "/CN=tickwheel test CA",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
        "-out",
        &s(&f("ca.crt")),
    ]);
    for (name, cn, ext) in [
        ("server", "localhost", "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n"),
        ("client", "tickwheel test client", "extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n"),
    ] {
        key(&f(&format!("{name}.key")));
        openssl(&[
            "req", "-new", "-key", &s(&f(&format!("{name}.key"))), "-subj", &format!("/CN={cn}"),
            "-out", &s(&f(&format!("{name}.csr"))),
        ]);
        std::fs::write(f(&format!("{name}.ext")), ext).expect("extensions file");
        openssl(&[
            "x509", "-req", "-in", &s(&f(&format!("{name}.csr"))), "-CA", &s(&f("ca.crt")),
            "-CAkey", &s(&f("ca.key")), "-CAcreateserial", "-days", "2",
            "-extfile", &s(&f(&format!("{name}.ext"))), "-out", &s(&f(&format!("{name}.crt"))),
        ]);
    }
    TlsFiles {
        ca: f("ca.crt"),
        server_cert: f("server.crt"),
        server_key: f("server.key"),
        client_cert: f("client.crt"),
        client_key: f("client.key"),
    }
}

fn s(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[track_caller]
fn openssl(args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("openssl (needed for the TLS tests): {e}"));
    assert!(
        out.status.success(),
        "openssl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
