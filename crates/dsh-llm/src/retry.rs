//! The retry plugin on the `llm/stream` waterfall.
//!
//! Provider-neutral: it only looks at [`LlmError::is_transient`].

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use dsh_kernel::ErrorCode;
use dsh_kernel::{Next, Registration};

use crate::{ChunkStream, LlmError, LlmService, ModelRequest};
use futures_util::StreamExt;

/// Retry policy. `max_retries == 0` disables retrying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryConfig {
    /// Retries after the first attempt (default 3).
    pub max_retries: u32,
    /// Backoff before the first retry; doubles per retry (default 500 ms).
    pub base: Duration,
    /// Upper bound of any wait, including a server's `Retry-After` (default 8 s).
    pub cap: Duration,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base: Duration::from_millis(500),
            cap: Duration::from_secs(8),
        }
    }
}

impl RetryConfig {
    /// The wait before retry number `attempt` (0-based): the error's
    /// `retry_after` if it has one, else `base · 2^attempt` with "equal
    /// jitter" (uniform in its upper half); always at most `cap`.
    pub fn delay(&self, attempt: u32, err: &LlmError) -> Duration {
        if let Some(d) = err.retry_after {
            return d.min(self.cap);
        }
        let exp = self
            .base
            .saturating_mul(1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX))
            .min(self.cap);
        let half = exp / 2;
        let jitter = half.mul_f64(random_unit());
        half + jitter
    }
}

/// The retry plugin: its policy installs the listener on the kernel's
/// [`LlmService`] (see [`install_retry`], which it calls).
impl dsh_kernel::Plugin for RetryConfig {
    /// # Errors
    /// `MISSING_SERVICE` without an [`LlmService`].
    fn install(self, kernel: &dsh_kernel::Kernel) -> Result<Registration, dsh_kernel::DshError> {
        let service = kernel
            .service::<LlmService>()
            .map_err(dsh_kernel::DshError::from)?;
        Ok(install_retry(&service, self))
    }
}

/// Installs the retry listener on `service.on_stream()`.
///
/// A stream whose first item is a transient error (`RATE_LIMIT`, `SERVER`,
/// `NETWORK`, `TIMEOUT`, see [`LlmError::is_transient`]) is restarted by
/// running the rest of the chain again, after [`RetryConfig::delay`]. Nothing
/// is retried once a chunk reached the consumer; each retry is logged with
/// one `tracing::warn!` whose message says what failed and when the retry
/// comes (the CLI shows it as a `dsh: warning:` line); the final error is returned unchanged (its code kept).
/// Waiting is abort-aware: cancelling `options.cancel` ends it with `ABORTED`.
/// Undoing the registration removes the listener.
pub fn install_retry(service: &LlmService, config: RetryConfig) -> Registration {
    service.on_stream().on(
        move |options: ModelRequest, next: Next<ModelRequest, ChunkStream>| async move {
            if config.max_retries == 0 {
                return next.run(options).await;
            }
            let first = next.clone().run(options.clone()).await;
            retrying(first, next, options, config)
        },
    )
}

struct RetryState {
    current: ChunkStream,
    next: Next<ModelRequest, ChunkStream>,
    options: ModelRequest,
    config: RetryConfig,
    attempt: u32,
    delivered: bool,
    ended: bool,
}

fn retrying(
    first: ChunkStream,
    next: Next<ModelRequest, ChunkStream>,
    options: ModelRequest,
    config: RetryConfig,
) -> ChunkStream {
    let state = RetryState {
        current: first,
        next,
        options,
        config,
        attempt: 0,
        delivered: false,
        ended: false,
    };
    Box::pin(futures_util::stream::unfold(state, |mut st| async move {
        if st.ended {
            return None;
        }
        loop {
            match st.current.next().await {
                Some(Ok(chunk)) => {
                    st.delivered = true;
                    return Some((Ok(chunk), st));
                }
                Some(Err(err)) => {
                    let retry = !st.delivered
                        && !err.after_output
                        && err.is_transient()
                        && st.attempt < st.config.max_retries
                        && !st.options.cancel.is_cancelled();
                    if !retry {
                        st.ended = true;
                        return Some((Err(err), st));
                    }
                    let delay = st.config.delay(st.attempt, &err);
                    st.attempt += 1;
                    tracing::warn!(
                        model = %st.options.model,
                        code = %err.code(),
                        attempt = st.attempt,
                        max_retries = st.config.max_retries,
                        delay_ms = delay.as_millis() as u64,
                        "the model request failed ({}: {err}); retrying in {:.1} s (retry {} of {})",
                        err.code(),
                        delay.as_secs_f64(),
                        st.attempt,
                        st.config.max_retries
                    );
                    tokio::select! {
                        _ = st.options.cancel.cancelled() => {
                            st.ended = true;
                            return Some((Err(LlmError::aborted("aborted")), st));
                        }
                        _ = tokio::time::sleep(delay) => {}
                    }
                    st.current = st.next.clone().run(st.options.clone()).await;
                }
                None => return None,
            }
        }
    }))
}

/// A uniform sample in `[0, 1)` from std's randomly keyed hasher (no extra
/// dependency; quality is ample for jitter).
fn random_unit() -> f64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Parses a `Retry-After` value given in (possibly fractional) seconds.
/// HTTP-date values are not supported and yield `None`.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    if (0.0..1e9).contains(&secs) {
        Some(Duration::from_secs_f64(secs))
    } else {
        None
    }
}
