//! `[budget] max_cost_per_session`: a request that would take a session's
//! cost past the budget is not sent.
//!
//! Before each model request (an `agent/request` listener, after
//! compaction and the `/model` switch have shaped the request), the
//! session's cost so far (its log priced by the [`Catalogue`], see
//! [`dsh_session::cost`]) plus the estimated cost of this request (the
//! context meter's token estimate, the one compaction uses, at the
//! model's uncached input price) is compared with the budget. When it
//! would pass it, the step fails with `BUDGET_EXCEEDED` and the turn
//! ends; nothing was sent. A model without a price cannot be checked:
//! that is said once per model (a warning) and the request goes on.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use dsh_agent::{Agent, AgentRegistry, RequestContext};
use dsh_kernel::sync::lock;
use dsh_kernel::{DshError, Registration};
use dsh_llm::ModelRequest;
use dsh_protocol::codes;
use dsh_session::cost::{format_money, CostMeter};

use crate::catalogue::Catalogue;

/// The budget check of a stack's sessions.
pub struct Budget {
    max: f64,
    catalogue: Catalogue,
    compactor: Arc<dsh_compaction::Compactor>,
    /// Each session's cost so far, brought up to date at each check.
    meters: Mutex<HashMap<String, CostMeter>>,
    /// Models already warned about (no price, so no check).
    warned: Mutex<HashSet<String>>,
}

/// The warning for a session whose model has no price: the budget
/// cannot be checked.
pub fn unchecked_warning(model: &str) -> String {
    format!(
        "[budget] max_cost_per_session cannot be checked: no price is known for model {model:?} (add input_price and output_price to [models.{model:?}]); its requests are not limited"
    )
}

impl Budget {
    /// A check of `max` (in the model's currency) pricing with
    /// `catalogue` and estimating requests with `compactor`'s meter.
    /// `told` is the model the user was already warned about when the
    /// configuration was resolved (its [`unchecked_warning`] is not
    /// repeated).
    pub fn new(
        max: f64,
        catalogue: Catalogue,
        compactor: Arc<dsh_compaction::Compactor>,
        told: &str,
    ) -> Arc<Budget> {
        let warned = catalogue
            .price(told)
            .is_none()
            .then(|| told.to_string())
            .into_iter()
            .collect();
        Arc::new(Budget {
            max,
            catalogue,
            compactor,
            meters: Mutex::new(HashMap::new()),
            warned: Mutex::new(warned),
        })
    }

    /// Registers the check on `agent/request` (after the listeners already
    /// there: it sees the request as it will be sent). Undo removes it.
    pub fn install(self: &Arc<Self>, agents: &AgentRegistry) -> Registration {
        let me = self.clone();
        agents.hooks().request.on(move |ctx: RequestContext, next| {
            let checked = me.check(&ctx.agent, &ctx.request, now_ms());
            async move {
                checked?;
                next.run(ctx).await
            }
        })
    }

    /// Whether `agent` may send `request` at `now_ms`.
    ///
    /// # Errors
    /// `BUDGET_EXCEEDED` when the session's cost so far plus the
    /// request's estimated cost passes the budget; the message gives the
    /// figures.
    pub fn check(
        &self,
        agent: &Arc<dyn Agent>,
        request: &ModelRequest,
        now_ms: u64,
    ) -> Result<(), DshError> {
        let Some(price) = self.catalogue.price(&request.model) else {
            if lock(&self.warned).insert(request.model.clone()) {
                tracing::warn!(target: "dsh", "{}", unchecked_warning(&request.model));
            }
            return Ok(());
        };
        let session = agent.session();
        let spent = {
            let mut meters = lock(&self.meters);
            let meter = meters.entry(session.id().to_string()).or_default();
            let price_of = |m: &str| self.catalogue.price(m);
            for e in session.events_since(meter.observed()) {
                meter.observe(&e, &price_of);
            }
            meter.cost().clone()
        };
        // Amounts in another currency do not add up with this price's.
        let spent_amount = match &spent.currency {
            Some(c) if *c != price.currency => 0.0,
            _ => spent.amount,
        };
        let tokens = self.compactor.estimate(agent, request);
        let next = price.input_cost(tokens, now_ms);
        if spent_amount + next <= self.max {
            return Ok(());
        }
        let money = |a: f64| format_money(a, &price.currency);
        let so_far = if spent.unpriced > 0 {
            format!("≥ {}", money(spent_amount))
        } else {
            money(spent_amount)
        };
        Err(DshError::new(
            codes::BUDGET_EXCEEDED,
            format!(
                "session cost {so_far} + about {} for the next request ({tokens} input tokens on {}) would pass the budget of {} ([budget] max_cost_per_session)",
                money(next),
                request.model,
                money(self.max)
            ),
        ))
    }
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
