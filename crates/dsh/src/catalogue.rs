//! The model catalogue: each model's context window and price, from the
//! built-in entries and the `[models.<name>]` tables of the configuration.
//!
//! Built-in entries carry DeepSeek's published prices as of
//! [`PRICES_DATE`] ([`PRICES_SOURCE`]), with the off-peak discount
//! (half price outside [`PEAK_HOURS_UTC`]); the offline `echo` model
//! costs nothing. A configured entry with `input_price` and
//! `output_price` replaces a built-in price with a flat one (no off-peak
//! schedule). A model in neither has no price: its cost is unknown, shown
//! as `?`, never as 0.

use std::collections::BTreeMap;

use dsh_session::cost::{format_money, Cost, ModelCost, OffPeak, Price, Rates, Tokens, TurnCost};

use crate::config::ModelSection;

/// When the built-in prices were taken from [`PRICES_SOURCE`].
pub const PRICES_DATE: &str = "2026-10-27";

/// Where the built-in prices come from.
pub const PRICES_SOURCE: &str = "https://api-docs.deepseek.com/quick_start/pricing";

/// DeepSeek's peak hours, UTC, `[start, end)`: 01:00–04:00 and
/// 06:00–10:00. Every other hour is off-peak, at half the price.
pub const PEAK_HOURS_UTC: [(u16, u16); 2] = [(1, 4), (6, 10)];

/// The currency prices are in when an entry does not say.
pub const DEFAULT_CURRENCY: &str = "USD";

/// Where a model's price comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PriceSource {
    /// DeepSeek's published prices, built in ([`PRICES_DATE`]).
    BuiltIn,
    /// A `[models.<name>]` table of the configuration.
    Config,
    /// The offline `echo` model: it calls no provider and costs nothing.
    Offline,
    /// A provider preset's published prices
    /// ([`crate::providers::Preset::prices`]).
    Published,
    /// A model of a local server (`ollama`, `lmstudio`, `vllm`,
    /// `llamacpp`): it costs nothing.
    Local,
}

/// One model of the catalogue.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelEntry {
    /// The context window in tokens, when known.
    pub context_window: Option<u64>,
    /// The price, when known.
    pub price: Option<Price>,
    /// Where the price comes from (meaningful when `price` is set).
    pub source: PriceSource,
    /// Whether the model takes images (a `read` of an image, an attached
    /// image).
    pub images: bool,
    /// The provider that serves it, when it is not the DeepSeek adapter or
    /// the offline model.
    pub provider: Option<String>,
}

/// Models by name.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalogue {
    entries: BTreeMap<String, ModelEntry>,
}

impl Default for Catalogue {
    /// [`Catalogue::builtin`].
    fn default() -> Self {
        Catalogue::builtin()
    }
}

/// A DeepSeek price at peak with the half-price off-peak schedule.
fn deepseek(cached_input: f64, input: f64, output: f64) -> Price {
    let rates = Rates {
        input,
        cached_input,
        output,
    };
    Price {
        currency: DEFAULT_CURRENCY.to_string(),
        rates,
        off_peak: Some(OffPeak {
            rates: rates.scaled(0.5),
            peak_utc_minutes: PEAK_HOURS_UTC
                .iter()
                .map(|(s, e)| (s * 60, e * 60))
                .collect(),
        }),
    }
}

impl Catalogue {
    /// The built-in entries: `deepseek-v4-flash` (and its alias
    /// `deepseek-flash`) and `deepseek-v4-pro` at DeepSeek's prices,
    /// and `echo` at 0.
    pub fn builtin() -> Catalogue {
        let window = Some(dsh_llm_deepseek::CONTEXT_WINDOW);
        let mut entries = BTreeMap::new();
        let flash = deepseek(0.006, 0.30, 1.20);
        let pro = deepseek(0.044, 1.32, 3.96);
        for (name, price) in [
            ("deepseek-v4-flash", flash.clone()),
            ("deepseek-flash", flash),
            ("deepseek-v4-pro", pro),
        ] {
            entries.insert(
                name.to_string(),
                ModelEntry {
                    context_window: window,
                    price: Some(price),
                    source: PriceSource::BuiltIn,
                    images: false,
                    provider: None,
                },
            );
        }
        entries.insert(
            crate::echo_model::ECHO_MODEL.to_string(),
            ModelEntry {
                context_window: window,
                price: Some(Price::flat(
                    DEFAULT_CURRENCY,
                    Rates {
                        input: 0.0,
                        cached_input: 0.0,
                        output: 0.0,
                    },
                )),
                source: PriceSource::Offline,
                // The offline model "sees" images (it describes them), so
                // the image paths are testable without a provider.
                images: true,
                provider: None,
            },
        );
        for preset in crate::providers::PRESETS {
            for known in preset.models {
                entries.insert(
                    format!("{}/{}", preset.name, known.id),
                    cat_known(preset.name, known),
                );
            }
        }
        Catalogue { entries }
    }

    /// The built-in entries with the configured `[models.<name>]` tables
    /// over them: a context window replaces the built-in one; a price
    /// (`input_price` and `output_price` both set, as the config parser
    /// requires) replaces the built-in price with a flat one.
    pub fn with_config(models: &BTreeMap<String, ModelSection>) -> Catalogue {
        let mut cat = Catalogue::builtin();
        for (name, m) in models {
            let entry = cat
                .entries
                .entry(name.clone())
                .or_insert_with(|| ModelEntry {
                    context_window: None,
                    price: None,
                    source: PriceSource::Config,
                    images: false,
                    provider: None,
                });
            if let Some(p) = &m.provider {
                entry.provider = Some(p.clone());
                let wire = m.id.as_deref().unwrap_or(name);
                if let Some(known) = crate::providers::known_model(p, wire) {
                    let builtin = cat_known(p, known);
                    entry.context_window = entry.context_window.or(builtin.context_window);
                    entry.images = builtin.images;
                    if entry.price.is_none() {
                        entry.price = builtin.price;
                        entry.source = builtin.source;
                    }
                } else if crate::providers::preset(p).is_some_and(|p| p.local) {
                    entry.price = Some(free());
                    entry.source = PriceSource::Local;
                }
            }
            if let Some(images) = m.images {
                entry.images = images;
            }
            if let Some(w) = m.context_window {
                entry.context_window = Some(w);
            }
            if let (Some(input), Some(output)) = (m.input_price, m.output_price) {
                entry.price = Some(Price::flat(
                    m.currency.as_deref().unwrap_or(DEFAULT_CURRENCY),
                    Rates {
                        input,
                        cached_input: m.cached_input_price.unwrap_or(input),
                        output,
                    },
                ));
                entry.source = PriceSource::Config;
            }
        }
        cat
    }

    /// The catalogue the reporting commands (`dsh session list`, `dsh
    /// usage`) price saved sessions with: the built-in entries and the
    /// user config's `[models.*]` (a project's config applies to its own
    /// sessions only, so it is not read). A user config that cannot be
    /// read or parsed is left out with a warning.
    pub fn for_reports() -> Catalogue {
        let Some(path) = crate::config::user_config_path() else {
            return Catalogue::builtin();
        };
        if !path.is_file() {
            return Catalogue::builtin();
        }
        // A regular file only: a fifo put there must not block a listing.
        let text = match dsh_tools::regular::read_to_string(&path) {
            Ok(text) => text,
            Err(e) => {
                tracing::warn!(path = %path.display(), "cannot read the user config for prices: {e}");
                return Catalogue::builtin();
            }
        };
        match crate::config::parse(&text) {
            Ok(file) => Catalogue::with_config(&file.models),
            Err(e) => {
                tracing::warn!(path = %path.display(), "the user config does not parse; built-in prices only: {e}");
                Catalogue::builtin()
            }
        }
    }

    /// Adds an entry for `route` when there is none: the preset's facts for
    /// a model it knows, free for a local server's model, else no price
    /// and no window (unknown).
    pub fn add_route(&mut self, route: &crate::providers::Route) {
        if let Some(entry) = self.entries.get_mut(&route.name) {
            if entry.price.is_none() && route.local {
                entry.price = Some(free());
                entry.source = PriceSource::Local;
            }
            return;
        }
        let entry = match crate::providers::known_model(&route.provider, &route.wire) {
            Some(known) => cat_known(&route.provider, known),
            None => {
                let local = route.local;
                ModelEntry {
                    context_window: None,
                    price: local.then(free),
                    source: if local {
                        PriceSource::Local
                    } else {
                        PriceSource::Config
                    },
                    images: route.images,
                    provider: Some(route.provider.clone()),
                }
            }
        };
        self.entries.insert(route.name.clone(), entry);
    }

    /// Whether `model` takes images (its entry says so; unknown models do
    /// not).
    pub fn takes_images(&self, model: &str) -> bool {
        self.entries.get(model).is_some_and(|e| e.images)
    }

    /// The entry of `model`.
    pub fn entry(&self, model: &str) -> Option<&ModelEntry> {
        self.entries.get(model)
    }

    /// The price of `model`; `None` when unknown.
    pub fn price(&self, model: &str) -> Option<&Price> {
        self.entries.get(model)?.price.as_ref()
    }

    /// Every model with an entry, by name.
    pub fn models(&self) -> impl Iterator<Item = (&str, &ModelEntry)> {
        self.entries.iter().map(|(n, e)| (n.as_str(), e))
    }

    /// Where `model`'s price comes from, for people: `DeepSeek's
    /// published prices of 2026-10-27 (URL); half price off-peak…`,
    /// `[models."x"] in the configuration`, `offline model: free`, or
    /// `no price known for "x" (add [models."x"] input_price and
    /// output_price)`.
    pub fn describe_source(&self, model: &str) -> String {
        match self.entries.get(model) {
            Some(ModelEntry {
                price: Some(_),
                source: PriceSource::BuiltIn,
                ..
            }) => format!(
                "DeepSeek's published prices of {PRICES_DATE} ({PRICES_SOURCE}); half price off-peak (peak {} UTC)",
                peak_hours()
            ),
            Some(ModelEntry {
                price: Some(_),
                source: PriceSource::Config,
                ..
            }) => format!("[models.{model:?}] in the configuration"),
            Some(ModelEntry {
                price: Some(_),
                source: PriceSource::Offline,
                ..
            }) => "the offline echo model calls no provider: free".to_string(),
            Some(ModelEntry {
                price: Some(_),
                source: PriceSource::Published,
                provider,
                ..
            }) => {
                let preset = provider.as_deref().and_then(crate::providers::preset);
                match preset.and_then(|p| p.prices) {
                    Some((date, url)) => format!(
                        "{}'s published prices of {date} ({url})",
                        preset.map_or("the provider", |p| p.name)
                    ),
                    None => "the provider's published prices".to_string(),
                }
            }
            Some(ModelEntry {
                price: Some(_),
                source: PriceSource::Local,
                provider,
                ..
            }) => format!(
                "a local server ({}): free",
                provider.as_deref().unwrap_or("local")
            ),
            _ => format!(
                "no price known for {model:?} (add input_price and output_price to [models.{model:?}])"
            ),
        }
    }
}

/// A price of nothing (local servers).
fn free() -> Price {
    Price::flat(
        DEFAULT_CURRENCY,
        Rates {
            input: 0.0,
            cached_input: 0.0,
            output: 0.0,
        },
    )
}

/// The entry of a preset's known model.
fn cat_known(provider: &str, known: &crate::providers::KnownModel) -> ModelEntry {
    ModelEntry {
        context_window: Some(known.context_window),
        price: known.price.map(|(input, cached_input, output)| {
            Price::flat(
                DEFAULT_CURRENCY,
                Rates {
                    input,
                    cached_input,
                    output,
                },
            )
        }),
        source: PriceSource::Published,
        images: known.images,
        provider: Some(provider.to_string()),
    }
}

/// What a session cost so far, for `/cost`: tokens by kind, the cost
/// (in total, of the last turn, per model), where the prices come from
/// and the budget.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CostReport {
    /// The model of the next request.
    pub model: String,
    /// The session's tokens.
    pub tokens: Tokens,
    /// The session's cost.
    pub cost: Cost,
    /// The last turn that reported usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_turn: Option<TurnCost>,
    /// Per model that served a request.
    pub models: BTreeMap<String, ModelCost>,
    /// Where each price comes from: the models that served requests and
    /// the model of the next request.
    pub sources: BTreeMap<String, String>,
    /// `[budget] max_cost_per_session`, when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<f64>,
}

impl CostReport {
    /// The report of the session logged as `events`, on `model` now.
    pub fn of(
        events: &[impl AsRef<dsh_session::SessionEvent>],
        catalogue: &Catalogue,
        model: &str,
        budget: Option<f64>,
    ) -> CostReport {
        let priced = dsh_session::cost::session_cost(events, |m: &str| catalogue.price(m));
        let mut sources = BTreeMap::new();
        for m in priced
            .models
            .keys()
            .map(String::as_str)
            .chain(std::iter::once(model))
        {
            if m != dsh_session::cost::UNKNOWN_MODEL {
                sources.insert(m.to_string(), catalogue.describe_source(m));
            }
        }
        CostReport {
            model: model.to_string(),
            tokens: priced.tokens,
            cost: priced.cost,
            last_turn: priced.turns.last().cloned(),
            models: priced.models,
            sources,
            budget,
        }
    }

    /// `/cost`'s text.
    pub fn text(&self) -> String {
        let t = &self.tokens;
        let mut out = format!("cost: {} this session", with_currency(&self.cost));
        if let Some(turn) = &self.last_turn {
            out.push_str(&format!(
                ", {} the last turn (turn {})",
                turn.cost.display(),
                turn.turn
            ));
        }
        if self.cost.unpriced > 0 {
            out.push_str(&format!(
                "\n  {} request(s) on a model without a price are not counted (unknown cost)",
                self.cost.unpriced
            ));
        }
        let rate = t
            .cache_hit_rate()
            .map_or_else(|| "-".to_string(), |r| format!("{:.0}%", r * 100.0));
        out.push_str(&format!(
            "\ntokens: input {} (cache hit {}, miss {}), output {} (reasoning {}); cache-hit rate {rate}; {} request(s)",
            t.prompt(),
            t.cache_hit,
            t.input,
            t.output,
            t.reasoning,
            t.requests
        ));
        if self.models.len() > 1 {
            for (name, m) in &self.models {
                out.push_str(&format!(
                    "\n  {name}: {} request(s), {}",
                    m.tokens.requests,
                    m.cost.display()
                ));
            }
        }
        for (name, source) in &self.sources {
            out.push_str(&format!("\nprices of {name}: {source}"));
        }
        if let Some(max) = self.budget {
            let currency = self.cost.currency.as_deref().unwrap_or(DEFAULT_CURRENCY);
            out.push_str(&format!(
                "\nbudget: {} per session ([budget] max_cost_per_session); {} left",
                format_money(max, currency),
                format_money((max - self.cost.amount).max(0.0), currency)
            ));
        }
        out
    }
}

/// `$0.0123 (USD)`, `≥ $0.0123 (USD)`, `? (unknown)`, `0.0123 EUR`.
fn with_currency(cost: &Cost) -> String {
    if cost.is_unknown() {
        return "? (unknown: no price for the model)".to_string();
    }
    match cost.currency.as_deref().unwrap_or(DEFAULT_CURRENCY) {
        "USD" => format!("{} (USD)", cost.display()),
        _ => cost.display(),
    }
}

/// `01:00–04:00, 06:00–10:00`.
fn peak_hours() -> String {
    PEAK_HOURS_UTC
        .iter()
        .map(|(s, e)| format!("{s:02}:00–{e:02}:00"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::TokenUsage;

    /// 2026-10-27 02:00 UTC (peak) and 12:00 UTC (off-peak).
    const PEAK: u64 = 1_793_059_200_000 + 2 * 3_600_000;
    const OFF: u64 = 1_793_059_200_000 + 12 * 3_600_000;

    fn million(input: i64, hit: i64, output: i64) -> TokenUsage {
        TokenUsage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: Some(hit),
            cache_write_tokens: None,
            reasoning_tokens: None,
        }
    }

    #[test]
    fn builtin_prices_are_deepseeks_with_half_price_off_peak() {
        let cat = Catalogue::builtin();
        let u = million(1_000_000, 1_000_000, 1_000_000);
        let flash = cat.price("deepseek-v4-flash").unwrap();
        assert!((flash.cost_of(&u, PEAK) - (0.006 + 0.30 + 1.20)).abs() < 1e-9);
        assert!((flash.cost_of(&u, OFF) - (0.006 + 0.30 + 1.20) / 2.0).abs() < 1e-9);
        assert_eq!(cat.price("deepseek-flash"), Some(flash));
        let pro = cat.price("deepseek-v4-pro").unwrap();
        assert!((pro.cost_of(&u, PEAK) - (0.044 + 1.32 + 3.96)).abs() < 1e-9);
        assert_eq!(
            cat.price("echo").map(|p| p.cost_of(&u, PEAK)),
            Some(0.0),
            "echo is free"
        );
        assert!(cat.price("gpt-x").is_none(), "unknown is unknown, not 0");
        assert_eq!(
            cat.entry("deepseek-v4-pro").and_then(|e| e.context_window),
            Some(dsh_llm_deepseek::CONTEXT_WINDOW)
        );
        assert!(cat.describe_source("deepseek-v4-pro").contains(PRICES_DATE));
        assert!(cat.describe_source("gpt-x").contains("no price known"));
    }

    #[test]
    fn a_configured_price_is_flat_and_overrides_the_builtin() {
        let file = crate::config::parse(
            "[models.deepseek-v4-pro]\ninput_price = 2\noutput_price = 4\n\
             [models.mine]\ncontext_window = 1000\ninput_price = 1.5\ncached_input_price = 0.5\noutput_price = 3\ncurrency = \"EUR\"\n\
             [models.windowed]\ncontext_window = 5000\n",
        )
        .unwrap();
        let cat = Catalogue::with_config(&file.models);
        let pro = cat.price("deepseek-v4-pro").unwrap();
        assert!(pro.off_peak.is_none());
        assert_eq!(pro.rates.cached_input, 2.0, "defaults to input_price");
        let u = million(1_000_000, 0, 0);
        assert_eq!(pro.cost_of(&u, OFF), 2.0, "no off-peak discount");
        let mine = cat.price("mine").unwrap();
        assert_eq!(mine.currency, "EUR");
        assert_eq!(mine.rates.cached_input, 0.5);
        assert_eq!(cat.entry("mine").unwrap().context_window, Some(1000));
        assert!(cat.describe_source("mine").contains("[models.\"mine\"]"));
        // A window alone gives no price.
        assert!(cat.price("windowed").is_none());
    }

    #[test]
    fn bad_prices_are_config_errors_naming_the_key() {
        for (text, key) in [
            (
                "[models.m]\ninput_price = -1\noutput_price = 1\n",
                "input_price",
            ),
            (
                "[models.m]\ninput_price = 1\noutput_price = nan\n",
                "output_price",
            ),
            (
                "[models.m]\ninput_price = 1\noutput_price = 1\ncached_input_price = \"cheap\"\n",
                "cached_input_price",
            ),
            (
                "[models.m]\ninput_price = 1\noutput_price = 1\ncurrency = \"\"\n",
                "currency",
            ),
            ("[models.m]\ninput_price = 1\n", "output_price"),
            (
                "[budget]\nmax_cost_per_session = 0\n",
                "max_cost_per_session",
            ),
            (
                "[budget]\nmax_cost_per_session = inf\n",
                "max_cost_per_session",
            ),
            ("[budget]\nmax_cost = 1\n", "max_cost"),
        ] {
            let e = crate::config::parse(text).unwrap_err();
            assert!(e.contains(key), "{text}: {e}");
        }
        let ok = crate::config::parse("[budget]\nmax_cost_per_session = 0.5\n").unwrap();
        assert_eq!(ok.budget.max_cost_per_session, Some(0.5));
    }

    #[test]
    fn project_prices_need_trust_and_a_project_budget_only_lowers() {
        let project = crate::config::parse(
            "[models.m]\ninput_price = 0\noutput_price = 0\n[budget]\nmax_cost_per_session = 5\n",
        )
        .unwrap();
        let keys = project.unsafe_keys();
        assert!(
            keys.contains(&"models.\"m\".input_price".to_string()),
            "{keys:?}"
        );
        let stripped = project.clone().without_unsafe_keys();
        assert!(!stripped.models["m"].sets_price());
        let user = crate::config::parse("[budget]\nmax_cost_per_session = 1\n").unwrap();
        let merged = user.clone().overlay(project);
        assert_eq!(merged.budget.max_cost_per_session, Some(1.0));
        let lower = crate::config::parse("[budget]\nmax_cost_per_session = 0.25\n").unwrap();
        assert_eq!(user.overlay(lower).budget.max_cost_per_session, Some(0.25));
    }
}
