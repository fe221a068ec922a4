//! TLS to PostgreSQL through rustls, so the binary links no system TLS
//! library: libpq's `sslmode` levels become one certificate verifier, and
//! the handshake's signatures are always checked with the crypto provider's
//! algorithms, whatever the level.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_cert_signed_by_trust_anchor, verify_server_name};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

/// What the connection hands the client library for TLS; cloned for each
/// reconnection and for each cancel request.
pub(crate) type Tls = MakeRustlsConnect;

/// What libpq's `sslmode` and `sslrootcert` ask of the server's
/// certificate. `disable`, `prefer` and `require` check nothing (libpq's
/// meaning: encryption without verification); `verify-ca` checks the chain;
/// `verify-full` the chain and the host name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TlsWish {
    pub(crate) verify: Verify,
    pub(crate) root_cert: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Verify {
    #[default]
    Nothing,
    Chain,
    ChainAndHost,
}

/// The connector for `wish`. The roots are the system's certificates and
/// those of `sslrootcert`, read only when the certificate is to be checked.
/// Errors are the problem in words, for the caller to put in context.
pub(crate) fn connector(wish: &TlsWish) -> Result<Tls, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    let mut pinned = Vec::new();
    if wish.verify != Verify::Nothing {
        // A store that cannot be read leaves fewer roots; a server that
        // needs them is then refused when connecting, naming the ledger.
        roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        if let Some(path) = &wish.root_cert {
            let problem =
                |e: &dyn std::fmt::Display| format!("sslrootcert {}: {e}", path.display());
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| problem(&e))?;
            if certs.is_empty() {
                return Err(problem(&"no PEM certificate in it"));
            }
            roots.add_parsable_certificates(certs.iter().cloned());
            pinned = certs;
        }
    }
    let verifier = Verifier {
        verify: wish.verify,
        roots,
        pinned,
        provider: provider.clone(),
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

#[derive(Debug)]
struct Verifier {
    verify: Verify,
    roots: RootCertStore,
    /// The certificates of `sslrootcert` as given: a server presenting one
    /// of them is trusted as it is, as libpq trusts a self-signed server
    /// certificate named there (webpki alone refuses a CA certificate used
    /// as the server's own). Its validity period is still checked.
    pinned: Vec<CertificateDer<'static>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self.verify == Verify::Nothing {
            return Ok(ServerCertVerified::assertion());
        }
        let cert = ParsedCertificate::try_from(end_entity)?;
        if self
            .pinned
            .iter()
            .any(|p| p.as_ref() == end_entity.as_ref())
        {
            within_validity(end_entity, now)?;
        } else {
            verify_server_cert_signed_by_trust_anchor(
                &cert,
                &self.roots,
                intermediates,
                now,
                self.provider.signature_verification_algorithms.all,
            )?;
        }
        if self.verify == Verify::ChainAndHost {
            verify_server_name(&cert, server_name)?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Whether `cert` is within its validity period at `now`: what the chain's
/// verification would have checked of a certificate trusted as it is.
pub(crate) fn within_validity(
    cert: &CertificateDer<'_>,
    now: UnixTime,
) -> Result<(), rustls::Error> {
    use x509_cert::der::Decode;
    let bad = |e: CertificateError| rustls::Error::InvalidCertificate(e);
    let parsed = x509_cert::Certificate::from_der(cert.as_ref())
        .map_err(|_| bad(CertificateError::BadEncoding))?;
    let validity = parsed.tbs_certificate.validity;
    let now = now.as_secs();
    if now < validity.not_before.to_unix_duration().as_secs() {
        return Err(bad(CertificateError::NotValidYet));
    }
    if now > validity.not_after.to_unix_duration().as_secs() {
        return Err(bad(CertificateError::Expired));
    }
    Ok(())
}
