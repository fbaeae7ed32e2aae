//! Redirects: followed only within the origin the request was sent to. A provider
//! request carries the API key (and `model.headers`) and, on a 307 or 308, the
//! body again; none of that may reach another scheme, host or port, so a redirect
//! there ends the request with an error that names the origin it pointed to.

use reqwest::redirect::{Attempt, Policy};

/// Most redirects followed for one request.
const MAX_REDIRECTS: usize = 10;

/// The redirect policy of every provider client.
pub(crate) fn policy() -> Policy {
    Policy::custom(|attempt: Attempt| {
        let Some(first) = attempt.previous().first() else { return attempt.stop() };
        if attempt.url().origin() != first.origin() {
            let refused = CrossOriginRedirect(attempt.url().origin().ascii_serialization());
            return attempt.error(refused);
        }
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(TooManyRedirects);
        }
        attempt.follow()
    })
}

/// A redirect to another origin, refused.
#[derive(Debug, thiserror::Error)]
#[error("the server redirected the request to another origin ({0}); credentials and request bodies are never sent across origins, so it was not followed")]
pub(crate) struct CrossOriginRedirect(String);

/// A chain of redirects longer than [`MAX_REDIRECTS`].
#[derive(Debug, thiserror::Error)]
#[error("the server redirected the request more than {MAX_REDIRECTS} times")]
pub(crate) struct TooManyRedirects;

/// The refusal behind `error`, if a redirect was refused.
pub(crate) fn refusal(error: &reqwest::Error) -> Option<String> {
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        if inner.is::<CrossOriginRedirect>() || inner.is::<TooManyRedirects>() {
            return Some(inner.to_string());
        }
        source = inner.source();
    }
    None
}
