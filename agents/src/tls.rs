//! TLS setup shared by every HTTP client of this crate.

/// Makes sure rustls has a process-wide crypto provider before an HTTP
/// client is built.
///
/// reqwest is built with rustls but without a bundled provider (ring builds
/// far faster than aws-lc, and needs no OpenSSL), so one must be installed
/// before any client — ours or rmcp's — is built. If the application
/// installed one already, it is kept.
pub(crate) fn ensure_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race with another thread installing one is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
