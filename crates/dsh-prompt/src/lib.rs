//! System-prompt assembly: ordered sections plus tool schemas, one assembly
//! per model step.
//!
//! Start at [`PromptService`]: plugins add [`Section`]s and tool-schema
//! providers (the tool registry is one), and the agent loop calls
//! [`PromptService::assemble`] before every step, then [`render`]s the
//! sections into the system prompt. The `system-prompt/assemble` waterfall
//! lets plugins rewrite the assembly. This crate holds no prompt text of its
//! own.

#![warn(missing_docs)]

use dsh_kernel::sync::lock;
use std::sync::{Arc, Mutex};

use dsh_kernel::{EmitHook, Registration, WaterfallHook};
use dsh_llm::ToolSet;

/// The text of a section: fixed, or computed at every render.
#[derive(Clone)]
pub enum SectionText {
    /// A fixed text.
    Static(String),
    /// Evaluated at every [`render`] (e.g. the current date).
    Computed(Arc<dyn Fn() -> String + Send + Sync>),
}

impl SectionText {
    /// The text now.
    pub fn evaluate(&self) -> String {
        match self {
            SectionText::Static(s) => s.clone(),
            SectionText::Computed(f) => f(),
        }
    }
}

impl std::fmt::Debug for SectionText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SectionText::Static(s) => f.debug_tuple("Static").field(s).finish(),
            SectionText::Computed(_) => f.write_str("Computed(..)"),
        }
    }
}

/// One named part of the system prompt. Sections are sorted ascending by
/// `order`; equal orders keep registration order.
#[derive(Debug, Clone)]
pub struct Section {
    /// A name for plugins that rewrite the assembly.
    pub name: String,
    /// Sort key, ascending.
    pub order: i32,
    /// The text.
    pub text: SectionText,
}

impl Section {
    /// A section with a fixed text.
    pub fn fixed(name: impl Into<String>, order: i32, text: impl Into<String>) -> Self {
        Section {
            name: name.into(),
            order,
            text: SectionText::Static(text.into()),
        }
    }

    /// A section whose text is computed at every render.
    pub fn computed(
        name: impl Into<String>,
        order: i32,
        text: impl Fn() -> String + Send + Sync + 'static,
    ) -> Self {
        Section {
            name: name.into(),
            order,
            text: SectionText::Computed(Arc::new(text)),
        }
    }
}

/// What one step is assembled from: the sorted sections and every tool schema.
#[derive(Debug, Clone, Default)]
pub struct PromptAssembly {
    /// Sections sorted by `order` (stable).
    pub sections: Vec<Section>,
    /// Tool schemas, provider by provider in registration order (the one
    /// provider's own set when there is one, so an unchanged tool set is
    /// the same shared, already serialized [`ToolSet`] step after step).
    pub tools: ToolSet,
}

/// Renders the sections: evaluates every text, drops empty strings (a
/// whitespace-only text is kept), joins with a blank line (`"\n\n"`).
pub fn render(assembly: &PromptAssembly) -> String {
    let texts: Vec<String> = assembly
        .sections
        .iter()
        .map(|s| s.text.evaluate())
        .filter(|t| !t.is_empty())
        .collect();
    texts.join("\n\n")
}

type ToolProvider = Arc<dyn Fn() -> ToolSet + Send + Sync>;

struct Entry<T> {
    id: u64,
    value: T,
}

#[derive(Default)]
struct State {
    next_id: u64,
    sections: Vec<Entry<Section>>,
    providers: Vec<Entry<ToolProvider>>,
}

struct Inner {
    state: Mutex<State>,
    /// The last concatenation of several providers' sets, with its parts:
    /// reused while every part is the same set.
    merged: Mutex<Option<(Vec<ToolSet>, ToolSet)>>,
    on_assemble: WaterfallHook<PromptAssembly, PromptAssembly>,
    on_change: EmitHook<()>,
}

/// The prompt registry: sections and tool providers, the
/// `system-prompt/assemble` waterfall and the `system-prompt/change`
/// notification. Cloning yields a handle to the same registry.
#[derive(Clone)]
pub struct PromptService {
    inner: Arc<Inner>,
}

impl Default for PromptService {
    fn default() -> Self {
        Self::new()
    }
}

impl PromptService {
    /// An empty registry.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                merged: Mutex::new(None),
                on_assemble: WaterfallHook::new("system-prompt/assemble"),
                on_change: EmitHook::new("system-prompt/change"),
            }),
        }
    }

    /// The `system-prompt/assemble` waterfall: listeners may rewrite or
    /// replace the assembly.
    pub fn on_assemble(&self) -> &WaterfallHook<PromptAssembly, PromptAssembly> {
        &self.inner.on_assemble
    }

    /// `system-prompt/change`: emitted when a section or provider is added or
    /// removed. (A provider whose list changes emits it through
    /// [`PromptService::notify_change`].)
    pub fn on_change(&self) -> &EmitHook<()> {
        &self.inner.on_change
    }

    /// Emits `system-prompt/change`.
    pub fn notify_change(&self) {
        // Listener failures are contained and logged by the hook.
        self.inner.on_change.emit(&());
    }

    /// Adds a section; undoing the registration removes it.
    pub fn add_section(&self, section: Section) -> Registration {
        self.add_entry(|st| &mut st.sections, section)
    }

    /// Adds a tool-schema provider, asked at every assembly; undoing the
    /// registration removes it. A provider that returns the same
    /// [`ToolSet`] while its tools are unchanged (as
    /// `ToolRegistry::tool_set` does) costs a step no copy.
    pub fn add_tool_provider<T: Into<ToolSet>>(
        &self,
        provider: impl Fn() -> T + Send + Sync + 'static,
    ) -> Registration {
        self.add_entry(
            |st| &mut st.providers,
            Arc::new(move || provider().into()) as ToolProvider,
        )
    }

    /// Appends `value` to the list `list` selects, emits
    /// `system-prompt/change`, and returns the registration that removes it
    /// (and emits again).
    fn add_entry<T: Send + 'static>(
        &self,
        list: fn(&mut State) -> &mut Vec<Entry<T>>,
        value: T,
    ) -> Registration {
        let id = {
            let mut st = lock(&self.inner.state);
            st.next_id += 1;
            let id = st.next_id;
            list(&mut st).push(Entry { id, value });
            id
        };
        self.notify_change();
        let inner = Arc::downgrade(&self.inner);
        Registration::new(move || {
            if let Some(inner) = inner.upgrade() {
                list(&mut lock(&inner.state)).retain(|e| e.id != id);
                // Listener failures are contained and logged by the hook.
                inner.on_change.emit(&());
            }
        })
    }

    /// The providers' sets in order as one set: the set itself for one
    /// provider, the cached concatenation while the parts are unchanged.
    fn merge(&self, mut parts: Vec<ToolSet>) -> ToolSet {
        if parts.len() <= 1 {
            return parts.pop().unwrap_or_default();
        }
        let mut cache = lock(&self.inner.merged);
        if let Some((last, set)) = cache.as_ref() {
            if last.len() == parts.len() && last.iter().zip(&parts).all(|(a, b)| a.same(b)) {
                return set.clone();
            }
        }
        let set = ToolSet::new(
            parts
                .iter()
                .flat_map(|p| p.schemas().iter().cloned())
                .collect(),
        );
        *cache = Some((parts, set.clone()));
        set
    }

    /// Builds the assembly (sections sorted stably by `order`, then every
    /// provider's tools) and runs it through `system-prompt/assemble`.
    pub async fn assemble(&self) -> PromptAssembly {
        let (mut sections, providers) = {
            let st = lock(&self.inner.state);
            let sections: Vec<Section> = st.sections.iter().map(|e| e.value.clone()).collect();
            let providers: Vec<ToolProvider> =
                st.providers.iter().map(|e| e.value.clone()).collect();
            (sections, providers)
        };
        sections.sort_by_key(|s| s.order);
        let tools = self.merge(providers.iter().map(|p| p()).collect());
        let assembly = PromptAssembly { sections, tools };
        self.inner
            .on_assemble
            .call(assembly, |a| async move { a })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_llm::ToolSchema;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn schema(name: &str) -> ToolSchema {
        ToolSchema {
            name: name.into(),
            description: String::new(),
            parameters: serde_json::json!({"type": "object"}),
            strict: None,
        }
    }

    #[tokio::test]
    async fn sections_sort_stably_and_render_drops_empty_texts() {
        let p = PromptService::new();
        let _a = p.add_section(Section::fixed("b", 10, "B"));
        let _b = p.add_section(Section::fixed("a", 0, "A"));
        let _c = p.add_section(Section::fixed("empty", 5, ""));
        let _d = p.add_section(Section::fixed("space", 5, " "));
        let _e = p.add_section(Section::fixed("b2", 10, "B2"));
        let asm = p.assemble().await;
        let names: Vec<&str> = asm.sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "empty", "space", "b", "b2"]);
        assert_eq!(render(&asm), "A\n\n \n\nB\n\nB2");
    }

    #[tokio::test]
    async fn computed_sections_evaluate_at_every_render() {
        let p = PromptService::new();
        let n = Arc::new(AtomicUsize::new(0));
        let n2 = n.clone();
        let _r = p.add_section(Section::computed("count", 0, move || {
            format!("call {}", n2.fetch_add(1, Ordering::SeqCst))
        }));
        let asm = p.assemble().await;
        assert_eq!(render(&asm), "call 0");
        assert_eq!(render(&asm), "call 1");
    }

    #[tokio::test]
    async fn providers_are_asked_at_every_assembly_and_removed_on_undo() {
        let p = PromptService::new();
        let changes = Arc::new(AtomicUsize::new(0));
        let c2 = changes.clone();
        let _l = p.on_change().on(move |_| {
            c2.fetch_add(1, Ordering::SeqCst);
        });
        let r1 = p.add_tool_provider(|| vec![schema("bash")]);
        let _r2 = p.add_tool_provider(|| vec![schema("echo"), schema("read")]);
        let names = |a: &PromptAssembly| {
            a.tools
                .schemas()
                .iter()
                .map(|t| t.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&p.assemble().await), ["bash", "echo", "read"]);
        r1.undo();
        assert_eq!(names(&p.assemble().await), ["echo", "read"]);
        assert_eq!(changes.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn the_assemble_waterfall_can_rewrite_the_assembly() {
        let p = PromptService::new();
        let _s = p.add_section(Section::fixed("base", 0, "base"));
        let _w = p
            .on_assemble()
            .on(|mut a: PromptAssembly, next| async move {
                a.sections.push(Section::fixed("extra", 99, "extra"));
                next.run(a).await
            });
        assert_eq!(render(&p.assemble().await), "base\n\nextra");
    }

    #[tokio::test]
    async fn unchanged_provider_sets_are_handed_out_as_the_same_set() {
        let p = PromptService::new();
        let one = ToolSet::new(vec![schema("bash")]);
        let two = ToolSet::new(vec![schema("read")]);
        let first = one.clone();
        let _r1 = p.add_tool_provider(move || first.clone());
        let a = p.assemble().await.tools;
        assert!(a.same(&one), "one provider: its own set");
        let second = two.clone();
        let _r2 = p.add_tool_provider(move || second.clone());
        let (b, c) = (p.assemble().await.tools, p.assemble().await.tools);
        assert!(b.same(&c), "the concatenation is cached");
        assert_eq!(b.schemas(), [schema("bash"), schema("read")]);
    }
}
