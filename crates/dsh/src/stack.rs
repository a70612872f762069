//! [`Stack`]: the whole dsh plugin stack, built from a [`Resolved`]
//! configuration.
//!
//! Kernel → LLM service (the offline `echo` model always; the DeepSeek
//! adapter and the retry plugin when a key is configured) → sessions →
//! prompt assembly (coding-agent sections, tool schemas from the registry) →
//! tool registry (the built-in tools) → agent registry. MCP servers start
//! with [`Stack::start_mcp`]; session persistence starts with the first
//! agent. Everything is registered in one [`Scope`]; [`Stack::shutdown`]
//! stops MCP servers, disposes the bash executor (killing what still runs)
//! and closes the scope (flushing session files).

use std::sync::Arc;

use dsh_agent::{Agent, AgentOptions, AgentRegistry};
use dsh_agent_loop::{AgentHandle, AgentLoop, LoopSetup};
use dsh_bash::BashExecutor;
use dsh_bash_local::LocalBashExecutor;
use dsh_kernel::{DshError, Kernel, Plugin, Registration, Scope};
use dsh_llm::{LlmAdapter, LlmService, ToolSet};
use dsh_prompt::PromptService;
use dsh_protocol::SandboxMode;
use dsh_session::{ErrorEvent, EventPayload, JsonlStore, SessionStore};
use dsh_tool_fs::Fence;
use dsh_tools::ToolRegistry;

use crate::approval::SessionApprover;
use crate::echo_model::{self, ECHO_MODEL};
use crate::plan::PlanMode;
use crate::prompt::coding_sections;
use crate::settings::Resolved;
use crate::StackError;

/// The running plugin stack.
pub struct Stack {
    /// The kernel with every service.
    pub kernel: Kernel,
    /// Everything registered, undone at shutdown.
    pub scope: Scope,
    /// The LLM service (adapters by model name).
    pub llm: Arc<LlmService>,
    /// The session store.
    pub store: Arc<SessionStore>,
    /// The system-prompt assembly.
    pub prompt: Arc<PromptService>,
    /// The tool registry.
    pub tools: Arc<ToolRegistry>,
    /// The agent registry (hooks).
    pub agents: Arc<AgentRegistry>,
    /// The bash executor.
    pub executor: Arc<LocalBashExecutor>,
    /// The agents' background jobs (bash tasks, background sub-agents).
    pub jobs: Arc<dsh_jobs::JobTable>,
    /// The sub-agents the `subagent` tools start.
    pub subagents: Arc<crate::subagents::Subagents>,
    /// The writable roots of the file tools, kept equal to the sandbox's.
    pub fence: Fence,
    /// Where the file tools read and write: the disk until a front end
    /// routes them through an editor (`dsh acp` does for a client that
    /// serves files).
    pub files: dsh_tool_fs::FileAccess,
    /// The approver on the tool registry (policy, grants, the person).
    pub approver: Arc<SessionApprover>,
    /// The lasting permission rules (see [`crate::rules`]): suggest and
    /// save "always allow" rules through it.
    pub rules: Arc<crate::rules::Rules>,
    /// The plan-mode switch (see [`Stack::plan_mode`]).
    pub plan: Arc<PlanMode>,
    /// Who `ask_user` asks: empty until a front end that can answer sets
    /// an asker (the controller does while a client is attached).
    pub questions: Arc<crate::tools::ask_user::UserQuestions>,
    /// The command hooks, when any is configured (see
    /// [`Stack::submit_prompt`]).
    pub hooks: Option<Arc<crate::hooks::Installed>>,
    /// Context compaction (automatic on `agent/request`; see
    /// [`Stack::compact_now`]).
    pub compactor: Arc<dsh_compaction::Compactor>,
    /// Workspace checkpoints of the main agent's sessions (`/undo`,
    /// `/redo`, `/rewind`); see [`crate::checkpoints`].
    pub checkpoints: Arc<crate::checkpoints::Checkpoints>,
    /// The skills found when the stack was built (served by the `skill`
    /// tool, listed in the system prompt).
    pub skills: crate::prompt::skills::SkillCatalog,
    /// What the stack was built from.
    pub resolved: Resolved,
    /// Which parts it includes.
    pub options: StackOptions,
    /// MCP servers that started (see [`Stack::start_mcp`]).
    pub mcp: Vec<dsh_mcp::McpServer>,
    /// Notices for the user that did not stop anything (see
    /// [`Stack::take_warnings`]).
    warnings: std::sync::Mutex<Vec<String>>,
    /// The session [`Stack::announce_permission`] announced to: where the
    /// proxy logs `sandbox/network-denied`.
    announced: AnnouncedSession,
    /// The session log store, once persistence is installed (it starts
    /// with the first agent).
    persisting: std::sync::Mutex<Option<Arc<JsonlStore>>>,
    /// The model `/model` switched to, read by the `agent/request`
    /// listener (see [`Stack::set_model`]); `None`: the resolved model.
    model_override: Arc<std::sync::Mutex<Option<String>>>,
    /// The adapters of routed models (see [`crate::providers`]): the
    /// resolved ones, then those `/model provider/model` added.
    routed: std::sync::Mutex<Vec<crate::providers::AdapterSetup>>,
}

/// A session claimed by [`Stack::prepare_session`], ready for
/// [`Stack::create_agent_in`]. Dropping it unused leaves a resumed log
/// locked until the stack shuts down.
#[derive(Debug)]
pub struct PreparedSession {
    id: String,
    seed: Vec<dsh_session::SessionEvent>,
}

impl PreparedSession {
    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The events the session starts with (the resumed log, plus repair
    /// markers and synthesized results).
    pub fn seed(&self) -> &[dsh_session::SessionEvent] {
        &self.seed
    }
}

/// The turn an event belongs to, when it names one.
fn turn_of(event: &dsh_session::SessionEvent) -> Option<u64> {
    match &event.data {
        EventPayload::TurnStart(e) => Some(e.turn),
        EventPayload::TurnEnd(e) => Some(e.turn),
        EventPayload::StepStart(e) | EventPayload::StepEnd(e) => Some(e.turn),
        EventPayload::AssistantMessage(e) => Some(e.turn),
        EventPayload::ToolCall(e) => Some(e.turn),
        EventPayload::ToolResult(e) => Some(e.turn),
        EventPayload::Usage(e) => Some(e.turn),
        EventPayload::Error(e) => Some(e.turn),
        _ => None,
    }
}

/// What [`Stack::build_with`] includes beyond the services; everything is
/// on by default ([`Stack::build`]). An embedder that brings its own tools or
/// prompt, or keeps sessions in memory, turns parts off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackOptions {
    /// The coding-agent system-prompt sections (identity, rules,
    /// environment, `AGENTS.md`, the skills catalog), and the `AGENTS.md`
    /// of directories below the working directory added as context when a
    /// file tool first touches them.
    pub coding_prompt: bool,
    /// The built-in tools (`echo` offline, the bash family, the file and
    /// search tools, `skill` when skills were found).
    pub builtin_tools: bool,
    /// JSONL session files in the session directory (from the first agent
    /// on); off keeps sessions in memory only.
    pub persist_sessions: bool,
}

impl Default for StackOptions {
    fn default() -> Self {
        Self {
            coding_prompt: true,
            builtin_tools: true,
            persist_sessions: true,
        }
    }
}

impl Stack {
    /// Builds the whole stack ([`StackOptions::default`]). Must run inside a
    /// tokio runtime. Starts no process and touches no file.
    ///
    /// # Errors
    /// A registration conflict (only possible when the configuration names a
    /// model twice).
    pub fn build(resolved: Resolved) -> Result<Stack, StackError> {
        Self::build_with(resolved, StackOptions::default())
    }

    /// Builds the stack with the parts `options` selects.
    ///
    /// # Errors
    /// As [`Stack::build`].
    pub fn build_with(resolved: Resolved, options: StackOptions) -> Result<Stack, StackError> {
        let kernel = Kernel::new();
        let scope = Scope::new();
        let llm = Arc::new(LlmService::new());
        scope.add(kernel.provide(llm.clone()).map_err(DshError::from)?);
        scope.add(llm.register_adapter(&[ECHO_MODEL], Arc::new(echo_model::adapter()))?);
        if let Some(cfg) = &resolved.deepseek {
            scope.add(cfg.clone().install(&kernel)?);
        }
        let routed = resolved.adapters.clone();
        for setup in &routed {
            scope.add(setup.clone().register(&llm).map_err(DshError::from)?);
        }
        if resolved.deepseek.is_some() || !resolved.adapters.is_empty() {
            let retry = dsh_llm::RetryConfig {
                max_retries: resolved.max_retries,
                ..Default::default()
            };
            scope.add(retry.install(&kernel)?);
        }

        let store = Arc::new(SessionStore::new());
        scope.add(kernel.provide(store.clone()).map_err(DshError::from)?);

        let prompt = Arc::new(PromptService::new());
        scope.add(kernel.provide(prompt.clone()).map_err(DshError::from)?);
        let user_dir = crate::config::user_config_dir();
        let skills = crate::prompt::skills::discover(&resolved.cwd, user_dir.as_deref());
        let skill_tool = options.builtin_tools
            && !skills.is_empty()
            && crate::tools::selected(
                resolved.tools.as_deref(),
                resolved.model == ECHO_MODEL,
                "skill",
            );
        if options.coding_prompt {
            for section in coding_sections(
                &resolved.cwd,
                user_dir.as_deref(),
                &skills.skills,
                skill_tool,
            ) {
                scope.add(prompt.add_section(section));
            }
        }

        let tools = Arc::new(ToolRegistry::new());
        tools.set_strict(resolved.strict_tools);
        scope.add(kernel.provide(tools.clone()).map_err(DshError::from)?);
        // First, so it is the outermost tools/execute listener: an abort
        // never waits on a call blocked in a system call.
        scope.add(crate::tools::detached::install(&tools));
        scope.add(feed_prompt(&prompt, &tools));
        scope.add(
            crate::result_limit::ResultLimit {
                max_bytes: resolved.max_result_bytes,
                session_dir: resolved.session_dir.clone(),
            }
            .install(&kernel)?,
        );
        let announced: AnnouncedSession = Arc::new(std::sync::Mutex::new(None));
        let mut bash_config = resolved.bash.clone();
        if let Some(hosts) = &resolved.network_hosts {
            bash_config.network_proxy = Some(network_proxy(hosts.clone(), announced.clone()));
        }
        let executor = Arc::new(LocalBashExecutor::new(bash_config));
        let jobs = Arc::new(dsh_jobs::JobTable::new());
        scope.add(kernel.provide(jobs.clone()).map_err(DshError::from)?);
        let dyn_exec: Arc<dyn BashExecutor> = executor.clone();
        let fence = Fence::open();
        set_fence(&fence, resolved.permission, &resolved.cwd);
        // For a write approved to escalate to `workspace-write`; the
        // working directory never changes, so neither do these.
        fence.set_workspace_roots(roots_of(SandboxMode::WorkspaceWrite, &resolved.cwd));
        let files = dsh_tool_fs::FileAccess::disk();
        let approver = Arc::new(SessionApprover::new(resolved.approval, None));
        scope.add(tools.set_approver(approver.clone()));
        // Before the escalation guard: an ask rule's question wins the tie.
        let rules = crate::rules::Rules::new(resolved.permission_rules.clone());
        approver.set_rules(rules.clone());
        scope.add(crate::rules::install(
            &tools,
            rules.clone(),
            executor.clone(),
        ));
        scope.add(crate::escalation::install(&tools, executor.clone()));
        let plan = PlanMode::new();
        scope.add(crate::plan::install_guard(&tools, plan.clone()));
        if options.builtin_tools {
            scope.add(
                crate::tools::BuiltinTools {
                    fence: fence.clone(),
                    files: files.clone(),
                    executor: dyn_exec,
                    jobs: jobs.clone(),
                    root: resolved.cwd.clone(),
                    only: resolved.tools.clone(),
                    offline: resolved.model == ECHO_MODEL,
                    skills: skills.skills.clone(),
                    plan: plan.clone(),
                    approver: Some(approver.clone()),
                    allow_parallel_in_progress: resolved.todo_allow_parallel_in_progress,
                }
                .install(&kernel)?,
            );
            // `web_fetch` and `web_search`, when `[web]` (or the tool list)
            // turned them on.
            scope.add(
                dsh_tool_web::WebTools {
                    fetch: resolved.web.fetch.clone(),
                    search: resolved.web.search.clone(),
                }
                .install(&kernel)?,
            );
        }
        if options.coding_prompt {
            scope.add(
                crate::prompt::nested::NestedInstructions::new(&resolved.cwd).install(&kernel)?,
            );
        }

        let agents = Arc::new(AgentRegistry::new());
        scope.add(kernel.provide(agents.clone()).map_err(DshError::from)?);
        let subagents = crate::subagents::Subagents::new(
            kernel.clone(),
            agents.clone(),
            jobs.clone(),
            resolved.subagent_max_depth,
            dsh_llm::StepLimits {
                max_tool_calls: resolved.max_tool_calls,
                max_output_bytes: resolved.max_step_output_bytes,
            },
        );
        if options.builtin_tools {
            let (only, offline) = (resolved.tools.clone(), resolved.model == ECHO_MODEL);
            scope.add(subagents.install(&tools, move |name| {
                crate::tools::selected(only.as_deref(), offline, name)
            })?);
        }
        let questions = crate::tools::ask_user::UserQuestions::new();
        if options.builtin_tools
            && crate::tools::selected(
                resolved.tools.as_deref(),
                resolved.model == ECHO_MODEL,
                crate::tools::ask_user::ASK_USER_TOOL,
            )
        {
            let children = subagents.clone();
            scope.add(tools.register(crate::tools::ask_user::ask_user_tool(
                questions.clone(),
                Arc::new(move |agent| children.depth_of(agent) == 0),
            ))?);
        }
        // Before the hooks: a presented plan ends the turn without asking
        // the Stop hooks to keep it going.
        scope.add(crate::plan::install_turn_end(&agents, plan.clone()));
        let hooks = (!resolved.hooks.is_empty()).then(|| {
            // Hooks run unconfined, with the environment bash commands get.
            let env = dsh_process::env::scrub(std::env::vars_os(), &resolved.bash.env_passthrough);
            let (installed, reg) = crate::hooks::install(
                dsh_hooks::Hooks::new(resolved.hooks.clone(), env),
                &tools,
                &agents,
                executor.clone(),
                resolved.cwd.clone(),
                options
                    .persist_sessions
                    .then(|| resolved.session_dir.clone()),
            );
            scope.add(reg);
            installed
        });
        let compactor = dsh_compaction::Compactor::new(resolved.compaction.clone(), llm.clone());
        scope.add(compactor.install(&agents));
        // Prepended after the compactor, so it runs first and a
        // compaction's summary request goes to the switched model too.
        let model_override = Arc::new(std::sync::Mutex::new(None));
        scope.add(install_model_override(
            &agents,
            resolved.model.clone(),
            model_override.clone(),
        ));
        // `read` of an image asks whether the model in force takes images.
        files.set_images(image_policy(
            resolved.catalogue.clone(),
            resolved.model.clone(),
            model_override.clone(),
        ));
        // Innermost: it checks the request as it will be sent.
        if let Some(max) = resolved.max_cost_per_session {
            let budget = crate::budget::Budget::new(
                max,
                resolved.catalogue.clone(),
                compactor.clone(),
                &resolved.model,
            );
            scope.add(budget.install(&agents));
        }
        let checkpoints = crate::checkpoints::Checkpoints::new(
            resolved.session_dir.clone(),
            resolved.cwd.clone(),
            MAIN_AGENT_ID,
        );
        if options.persist_sessions {
            checkpoints.install(&agents, &scope);
        }
        let mut resolved_warnings = resolved.warnings.clone();
        resolved_warnings.extend(
            skills
                .warnings
                .iter()
                .map(|w| format!("skill {w} (see `dsh skills list`)")),
        );
        Ok(Stack {
            kernel,
            scope,
            llm,
            store,
            prompt,
            tools,
            agents,
            executor,
            jobs,
            subagents,
            fence,
            files,
            approver,
            rules,
            plan,
            questions,
            hooks,
            compactor,
            checkpoints,
            skills,
            resolved,
            options,
            mcp: Vec::new(),
            warnings: std::sync::Mutex::new(resolved_warnings),
            announced,
            persisting: std::sync::Mutex::new(None),
            model_override,
            routed: std::sync::Mutex::new(routed),
        })
    }

    /// The permission mode new commands and file writes run under.
    pub fn permission(&self) -> SandboxMode {
        self.executor.sandbox_mode()
    }

    /// Changes the permission mode for what runs from now on (commands
    /// already running keep theirs): the bash executor's sandbox and the
    /// file tools' fence together. When `agent` is given, its session logs
    /// the change as a `sandbox/mode` event with `source`.
    pub fn set_permission(&self, mode: SandboxMode, source: &str, agent: Option<&dyn Agent>) {
        self.executor.set_sandbox_mode(mode);
        set_fence(&self.fence, mode, &self.resolved.cwd);
        if let Some(agent) = agent {
            log_permission(agent, mode, source);
        }
    }

    /// Whether plan mode is on: `write`, `edit`, `bash`, `bash_kill` and
    /// `str_replace_editor` (but `view`) are denied until the model's plan
    /// is approved (see [`crate::plan`]).
    pub fn plan_mode(&self) -> bool {
        self.plan.is_active()
    }

    /// Turns plan mode on or off for the calls from now on. When it
    /// changes and `agent` is given, its session logs a `plan/mode` event
    /// with `source` and the model is told by a context message. Returns
    /// whether the mode changed.
    pub fn set_plan_mode(&self, on: bool, source: &str, agent: Option<&dyn Agent>) -> bool {
        self.plan.set(on, source, agent)
    }

    /// The model the agents' next requests go to: the one
    /// [`Stack::set_model`] switched to, else the resolved model.
    pub fn model(&self) -> String {
        dsh_kernel::sync::lock(&self.model_override)
            .clone()
            .unwrap_or_else(|| self.resolved.model.clone())
    }

    /// Whether the model in force ([`Stack::model`]) takes images, as the
    /// catalogue says (`[models.<name>] images = true`, provider routes).
    pub fn takes_images(&self) -> bool {
        self.resolved.catalogue.takes_images(&self.model())
    }

    /// The models served (registered adapters), in registration order:
    /// `echo`, then the DeepSeek models when a key is configured, then
    /// any added with [`Stack::add_adapter`].
    pub fn models(&self) -> Vec<String> {
        self.llm.models()
    }

    /// Switches the model for the requests from now on (the next step of
    /// a running turn included) of every agent on the resolved model —
    /// the main agent, its sub-agents, agents created later (a
    /// [`Stack::clear_session`] keeps the switch); an agent created with
    /// another model keeps its own. The request log records each
    /// request's model (`request/options`). When `agent` is given, its
    /// session logs [`MODEL_CHANGE_EVENT`] (`{"model", "source"}`) and the
    /// provider options again (`request/adapter`).
    ///
    /// # Errors
    /// [`StackError::Usage`] when no adapter serves `name`, listing the
    /// models served (a DeepSeek model without a key: that it needs one,
    /// as [`crate::model_problem`] says).
    pub fn set_model(
        &self,
        name: &str,
        source: &str,
        agent: Option<&dyn Agent>,
    ) -> Result<(), StackError> {
        let mut models = self.models();
        if !models.iter().any(|m| m == name) && self.add_route(name)? {
            models = self.models();
        }
        if !models.iter().any(|m| m == name) {
            let needs_key = self.resolved.deepseek.is_none()
                && dsh_llm_deepseek::DEFAULT_MODELS.contains(&name);
            return Err(StackError::Usage(crate::model_problem(
                name, &models, needs_key,
            )));
        }
        *dsh_kernel::sync::lock(&self.model_override) =
            (name != self.resolved.model).then(|| name.to_string());
        if let Some(agent) = agent {
            agent.session().append(EventPayload::Other {
                kind: MODEL_CHANGE_EVENT.to_string(),
                data: serde_json::json!({ "model": name, "source": source }),
            });
            self.log_adapter(agent, name);
        }
        Ok(())
    }

    /// Serves `name` when it is written `provider/model` for a provider
    /// whose key is there: registers an adapter for that one route.
    /// Returns whether it did.
    ///
    /// # Errors
    /// [`StackError::Usage`] when the provider is known but its key is
    /// missing, or its adapter refuses the settings.
    fn add_route(&self, name: &str) -> Result<bool, StackError> {
        let providers = &self.resolved.providers;
        let Some((provider, wire)) =
            crate::providers::split(name, providers, &std::collections::BTreeMap::new())
        else {
            return Ok(false);
        };
        let Some(p) = providers.iter().find(|p| p.name == provider) else {
            return Ok(false);
        };
        if p.kind == crate::providers::ProviderKind::DeepSeek && p.name == "deepseek" {
            return Ok(false);
        }
        if let Some(why) = p.missing_key() {
            return Err(StackError::Usage(format!("model \"{name}\": {why}")));
        }
        let route = crate::providers::Route {
            name: name.to_string(),
            provider: provider.to_string(),
            wire: wire.to_string(),
            images: crate::providers::known_model(provider, wire).is_some_and(|k| k.images),
            local: p.local,
        };
        let (mut setups, problems) = crate::providers::adapters(providers, &[route]);
        if let Some(problem) = problems.into_iter().next() {
            return Err(StackError::Usage(problem));
        }
        let Some(setup) = setups.pop() else {
            return Ok(false);
        };
        let registration = setup
            .clone()
            .register(&self.llm)
            .map_err(|e| StackError::Usage(e.to_string()))?;
        self.scope.add(registration);
        dsh_kernel::sync::lock(&self.routed).push(setup);
        Ok(true)
    }

    /// Logs `request/adapter` for `model` in `agent`'s session: the
    /// routed provider's options, the DeepSeek options, or the offline
    /// model.
    fn log_adapter(&self, agent: &dyn Agent, model: &str) {
        let routed = dsh_kernel::sync::lock(&self.routed)
            .iter()
            .find(|a| a.names().iter().any(|n| n == model))
            .cloned();
        match routed {
            Some(setup) => crate::requests::log_routed_adapter(agent, &setup, model),
            None => crate::requests::log_adapter(agent, self.deepseek_for(model)),
        }
    }

    /// The DeepSeek configuration when it serves `model`.
    fn deepseek_for(&self, model: &str) -> Option<&dsh_llm_deepseek::DeepSeekConfig> {
        self.resolved
            .deepseek
            .as_ref()
            .filter(|c| c.models.iter().any(|m| m == model))
    }

    /// The log file of session `id`, when sessions are persisted (it
    /// exists once the session's first event was flushed).
    pub fn session_path(&self, id: &str) -> Option<std::path::PathBuf> {
        let store = dsh_kernel::sync::lock(&self.persisting).clone()?;
        store.path_of(id).ok()
    }

    /// `/clear`: disposes `old` (waiting for it; its log is flushed and
    /// complete on disk), then creates a fresh `main` agent in a new
    /// session (new id, empty history) and announces the permission mode
    /// to it ([`Stack::announce_permission`]). The stack's switches carry
    /// over: the permission mode, a [`Stack::set_model`] switch, and plan
    /// mode (logged and told to the new model when on).
    ///
    /// # Errors
    /// As [`Stack::create_agent`]; `old` is disposed then.
    pub async fn clear_session(&self, old: AgentHandle) -> Result<AgentHandle, StackError> {
        old.dispose().await;
        let handle = self.create_agent(None)?;
        let agent = handle.agent();
        self.announce_permission(agent.as_ref());
        if let Some(model) = dsh_kernel::sync::lock(&self.model_override).clone() {
            agent.session().append(EventPayload::Other {
                kind: MODEL_CHANGE_EVENT.to_string(),
                data: serde_json::json!({ "model": model, "source": "/clear" }),
            });
        }
        if self.plan.is_active() {
            // Off then on: the new session logs the mode and its model is told.
            self.plan.set(false, "/clear", None);
            self.plan.set(true, "/clear", Some(agent.as_ref()));
        }
        Ok(handle)
    }

    /// The agent's current todo list: the last `todo/update` of its session
    /// (a resumed one's included); empty when it has none.
    pub fn todos(&self, agent: &dyn Agent) -> Vec<crate::tools::TodoItem> {
        crate::tools::todo::current_todos(&agent.session())
    }

    /// Takes the notices collected so far (ignored keys of an untrusted
    /// project config, a torn last line repaired on resume, …), oldest
    /// first; a front end shows them to the user.
    pub fn take_warnings(&self) -> Vec<String> {
        let mut warnings = std::mem::take(&mut *dsh_kernel::sync::lock(&self.warnings));
        warnings.extend(self.tools.take_strict_warnings());
        warnings
    }

    /// Serves `models` with `adapter` too (an embedder's own provider, a
    /// test's scripted model); undone at shutdown.
    ///
    /// # Errors
    /// `DUPLICATE_ADAPTER` when a model is already served.
    pub fn add_adapter(
        &self,
        models: &[&str],
        adapter: Arc<dyn LlmAdapter>,
    ) -> Result<(), StackError> {
        self.scope.add(self.llm.register_adapter(models, adapter)?);
        Ok(())
    }

    /// Starts the configured MCP servers concurrently and registers their
    /// tools, named with the resolved `mcp_tool_prefix`. A server that fails to start is left out (the others and the
    /// agent work); returns the failures as `(name, message)`, in the order
    /// they happened.
    ///
    /// Cancel-safe: each server joins [`Stack::mcp`] as soon as it is up, so
    /// if this future is dropped (Ctrl-C during start-up) [`Stack::shutdown`]
    /// stops the ones already started, and those still starting are killed
    /// with their process groups.
    pub async fn start_mcp(&mut self) -> Vec<(String, String)> {
        use futures_util::StreamExt;
        let prefix = &self.resolved.mcp_tool_prefix;
        let configs: Vec<_> = self
            .resolved
            .mcp
            .iter()
            .map(|c| c.clone().tool_prefix(prefix.clone()))
            .collect();
        let tools = self.tools.clone();
        let mut failures = Vec::new();
        let mut starts = std::pin::pin!(dsh_mcp::start_each(configs, &tools));
        while let Some((name, result)) = starts.next().await {
            match result {
                Ok(server) => self.mcp.push(server),
                Err(e) => failures.push((name, e.to_string())),
            }
        }
        // Configuration order, whatever order they came up in.
        let order: Vec<String> = self.resolved.mcp.iter().map(|c| c.name.clone()).collect();
        self.mcp.sort_by_key(|s| {
            order
                .iter()
                .position(|n| n == s.name())
                .unwrap_or(usize::MAX)
        });
        failures
    }

    /// Creates the `main` agent on the resolved model, resuming session
    /// `resume` from the session directory when given (the log is seeded and
    /// new events append to the same file): [`Stack::prepare_session`] then
    /// [`Stack::create_agent_in`].
    ///
    /// # Errors
    /// [`StackError::Usage`]: an unusable session directory; a resume id
    /// whose log is missing, corrupt, unwritable or in use.
    pub fn create_agent(&self, resume: Option<&str>) -> Result<AgentHandle, StackError> {
        let prepared = self.prepare_session(resume)?;
        self.create_agent_in(prepared)
    }

    /// Claims the session before anything runs. A new session gets a fresh
    /// id. A resumed one has its log opened for appending and locked now
    /// (held until the stack shuts down), so a second `--resume` of it, a
    /// read-only log or a corrupt one fails before MCP servers start or a
    /// turn runs. A torn last line is cut off (its bytes saved beside the
    /// log) and an `error` event `LOG_REPAIRED` is logged saying so; tool
    /// calls of the last reply left without a result get `INTERRUPTED`
    /// results. Both also become warnings ([`Stack::take_warnings`]).
    ///
    /// # Errors
    /// [`StackError::Usage`] naming the session and the file.
    pub fn prepare_session(&self, resume: Option<&str>) -> Result<PreparedSession, StackError> {
        let Some(id) = resume else {
            return Ok(PreparedSession {
                id: dsh_session::new_session_id().into_string(),
                seed: Vec::new(),
            });
        };
        let dir = &self.resolved.session_dir;
        let path = dir.join(format!("{id}.jsonl"));
        dsh_session::validate_session_id(id).map_err(|e| StackError::Usage(e.to_string()))?;
        if !path.is_file() {
            return Err(StackError::Usage(format!(
                "no session \"{id}\" in {} (see `dsh session list`)",
                dir.display()
            )));
        }
        let in_use = || {
            StackError::Usage(format!(
                "session \"{id}\" is in use by another dsh process ({})",
                path.display()
            ))
        };
        let repaired = match self.ensure_persistence()? {
            Some(store) => match store.open_log(id) {
                Ok(opened) => opened.repaired,
                Err(dsh_session::SessionError::Locked { .. }) => return Err(in_use()),
                Err(e) => return Err(StackError::Usage(format!("cannot resume: {e}"))),
            },
            None if dsh_session::is_locked(&path) => return Err(in_use()),
            None => None,
        };
        let log = dsh_session::load_jsonl(&path).map_err(|e| StackError::Usage(e.to_string()))?;
        let mut seed = log.events;
        let mut warnings = Vec::new();
        let mut extra = Vec::new();
        if let Some(repair) = repaired {
            let message = repair.describe(&path);
            warnings.push(message.clone());
            let turn = seed.iter().rev().find_map(turn_of).unwrap_or(0);
            extra.push(EventPayload::Error(ErrorEvent {
                turn,
                step: 0,
                message,
                code: Some(dsh_protocol::codes::LOG_REPAIRED.to_string()),
            }));
        } else if let Some(torn) = &log.torn_tail {
            // Read-only resume (no persistence): nothing is cut.
            warnings.push(format!(
                "{}: ignoring a torn last line {} (a write cut short)",
                path.display(),
                torn.line_no
            ));
        }
        let repair = dsh_session::repair_unfinished(&seed);
        let unanswered = repair
            .iter()
            .filter(|e| matches!(e, EventPayload::ToolResult(_)))
            .count();
        if unanswered > 0 {
            warnings.push(format!(
                "session \"{id}\": {unanswered} tool call(s) of the last reply had no result (the session ended first); they were answered with INTERRUPTED"
            ));
        }
        if let Some(EventPayload::TurnEnd(end)) = repair.last() {
            warnings.push(format!(
                "session \"{id}\": turn {} had no end (the process died during it); it was closed as interrupted",
                end.turn
            ));
        }
        extra.extend(repair);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        for data in extra {
            let seq = seed.last().map_or(0, |e| e.seq + 1);
            seed.push(dsh_session::SessionEvent {
                seq,
                time: now,
                data,
            });
        }
        dsh_kernel::sync::lock(&self.warnings).extend(warnings);
        Ok(PreparedSession {
            id: id.to_string(),
            seed,
        })
    }

    /// A new session (fresh id) whose history is `seed`: a fork of another
    /// session ([`dsh_session::fork_seed`] makes the seed from its events).
    /// Nothing on disk is claimed; the fork's log is written as it goes.
    pub fn prepare_fork(&self, seed: Vec<dsh_session::SessionEvent>) -> PreparedSession {
        PreparedSession {
            id: dsh_session::new_session_id().into_string(),
            seed,
        }
    }

    /// Creates the `main` agent in a session from [`Stack::prepare_session`].
    ///
    /// # Errors
    /// [`StackError::Usage`]: an unusable session directory; a session id
    /// already live in this process.
    pub fn create_agent_in(&self, prepared: PreparedSession) -> Result<AgentHandle, StackError> {
        let PreparedSession { id, seed } = prepared;
        // A resumed session keeps the mode its model was last told of.
        if crate::plan::active_in_log(&seed) {
            self.plan.set(true, "resume", None);
        }
        // bash spill files named by this session's results live with it
        // (`dsh session clean` removes them).
        self.executor
            .keep_spills_in(self.resolved.session_dir.join(&id).join("spill"));
        let options = AgentOptions {
            model: Some(self.resolved.model.clone()),
            system_prompt: self.resolved.system_prompt.clone(),
            max_steps: self.resolved.max_steps,
            context_window: Some(self.resolved.context_window),
            max_parallel_tool_calls: self.resolved.max_parallel,
            ..Default::default()
        };
        self.spawn_agent(
            MAIN_AGENT_ID,
            options,
            LoopSetup {
                session_id: Some(id),
                seed,
                step_limits: dsh_llm::StepLimits {
                    max_tool_calls: self.resolved.max_tool_calls,
                    max_output_bytes: self.resolved.max_step_output_bytes,
                },
            },
        )
    }

    /// Creates agent `id` with explicit options and session setup, with
    /// persistence to the session directory.
    ///
    /// # Errors
    /// [`StackError::Usage`] for an unusable session directory; a duplicate
    /// agent or session id.
    pub fn spawn_agent(
        &self,
        id: &str,
        options: AgentOptions,
        setup: LoopSetup,
    ) -> Result<AgentHandle, StackError> {
        self.ensure_persistence()?;
        AgentLoop::create_with(&self.kernel, id, options, setup).map_err(StackError::from)
    }

    /// The prompt as the agent should get it after the `UserPromptSubmit`
    /// hooks ([`crate::hooks::Installed::submit_prompt`]); without hooks,
    /// the prompt as one text block. Front ends call it for every prompt
    /// the user sends.
    pub async fn submit_prompt(
        &self,
        agent: &Arc<dyn Agent>,
        prompt: &str,
    ) -> crate::hooks::PromptDecision {
        match &self.hooks {
            Some(h) => h.submit_prompt(agent, prompt).await,
            None => crate::hooks::PromptDecision::Send(vec![dsh_llm::ContentBlock::text(prompt)]),
        }
    }

    /// Compacts `agent`'s history now (`/compact [focus]`, `dsh session
    /// compact`), with the system prompt and tools a step would send, so
    /// the summary request matches the agent's own. Call it while the
    /// agent is idle.
    ///
    /// # Errors
    /// [`StackError::Usage`] with [`NEEDS_MODEL`] on the offline echo
    /// model; [`StackError::Failed`] when the summary request fails
    /// (nothing was replaced then).
    pub async fn compact_now(
        &self,
        agent: &Arc<dyn Agent>,
        focus: Option<&str>,
    ) -> Result<dsh_compaction::Outcome, StackError> {
        let model = self.model();
        if model == ECHO_MODEL {
            return Err(StackError::Usage(NEEDS_MODEL.to_string()));
        }
        let assembly = self.prompt.assemble().await;
        let system = dsh_agent_loop::system_text(
            &dsh_prompt::render(&assembly),
            self.resolved.system_prompt.as_deref(),
        );
        let request = dsh_llm::ModelRequest {
            model,
            system: (!system.is_empty()).then_some(system),
            tools: (!assembly.tools.is_empty()).then_some(assembly.tools),
            ..Default::default()
        };
        self.compactor
            .compact(agent, &request, dsh_compaction::Reason::Manual, focus)
            .await
            .map_err(StackError::from)
    }

    /// Logs the permission mode in force and where it came from to the
    /// agent's session (`sandbox/mode`, `{"mode", "source"}`), and the
    /// provider's wire options (`request/adapter`). A front end calls it
    /// once its listeners are in place, before the first turn.
    ///
    /// Also logs the sandbox layers commands get (`sandbox/layers`) and,
    /// when a confining mode runs without the namespace layer although
    /// `[sandbox] namespaces = "auto"` asked for it, queues the warning
    /// saying so ([`Stack::take_warnings`]) — once per stack. The proxy of
    /// a `[sandbox] network` list logs its refusals to this session from
    /// now on (`sandbox/network-denied`).
    pub fn announce_permission(&self, agent: &dyn Agent) {
        log_permission(agent, self.permission(), &self.resolved.permission_source);
        let first = {
            let mut announced = dsh_kernel::sync::lock(&self.announced);
            let first = announced.is_none();
            *announced = Some(agent.session());
            first
        };
        let layers = crate::sandbox_layers::describe(
            &self.resolved.bash,
            self.resolved.network_hosts.as_ref(),
            self.permission(),
        );
        agent.session().append(EventPayload::Other {
            kind: crate::sandbox_layers::LAYERS_EVENT.to_string(),
            data: layers.to_json(),
        });
        if first {
            if let Some(warning) = layers.fallback_warning() {
                dsh_kernel::sync::lock(&self.warnings).push(warning);
            }
        }
        self.log_adapter(agent, &self.model());
    }

    /// Persistence starts with the first agent (or resumed session):
    /// commands that make none (`tools list`, `mcp list`) never touch the
    /// session directory. `None` when the stack keeps sessions in memory.
    fn ensure_persistence(&self) -> Result<Option<Arc<JsonlStore>>, StackError> {
        let mut started = dsh_kernel::sync::lock(&self.persisting);
        if !self.options.persist_sessions {
            return Ok(None);
        }
        if let Some(store) = started.as_ref() {
            return Ok(Some(store.clone()));
        }
        let backend = Arc::new(
            JsonlStore::new(self.resolved.session_dir.clone())
                .map_err(|e| StackError::Usage(e.to_string()))?,
        );
        self.scope.add(dsh_session::install_persistence(
            &self.store,
            backend.clone(),
        ));
        *started = Some(backend.clone());
        Ok(Some(backend))
    }

    /// Stops the MCP servers, kills every bash task still running and closes
    /// the scope (session files are flushed and synced). Waiting for the
    /// calls still running after the scope closed is bounded (two
    /// seconds): a tool call left behind blocked in a system call
    /// (see [`crate::tools::detached`]) does not hold the shutdown.
    pub async fn shutdown(self) {
        self.subagents.abort_all();
        for server in &self.mcp {
            server.shutdown().await;
        }
        self.executor.dispose().await;
        let checkpoints = self.checkpoints.clone();
        let _ = tokio::task::spawn_blocking(move || checkpoints.settle(QUIESCE_BOUND)).await;
        // The registrations are undone at the first poll; only the wait for
        // listeners still running is cut short.
        if tokio::time::timeout(QUIESCE_BOUND, self.scope.close_and_wait())
            .await
            .is_err()
        {
            tracing::warn!(
                target: "dsh",
                "a tool call is still running (blocked); shutting down without it"
            );
        }
    }
}

/// Makes the registry's schemas, but the hidden aliases
/// ([`crate::tools::HIDDEN_TOOLS`]), the prompt's tool list (asked at every
/// assembly; the same shared set until the registry changes) and forwards
/// `tools/change` as `system-prompt/change`. Undo removes both.
pub fn feed_prompt(prompt: &Arc<PromptService>, tools: &Arc<ToolRegistry>) -> Registration {
    let weak = Arc::downgrade(tools);
    // The registry's last set and what of it is offered.
    let last: std::sync::Mutex<Option<(ToolSet, ToolSet)>> = std::sync::Mutex::new(None);
    let provider = prompt.add_tool_provider(move || {
        let Some(all) = weak.upgrade().map(|tools| tools.tool_set()) else {
            return ToolSet::default();
        };
        let mut last = dsh_kernel::sync::lock(&last);
        if let Some((seen, offered)) = &*last {
            if seen.same(&all) {
                return offered.clone();
            }
        }
        let offered = if all.schemas().iter().all(|t| crate::tools::offered(&t.name)) {
            all.clone()
        } else {
            ToolSet::new(
                all.schemas()
                    .iter()
                    .filter(|t| crate::tools::offered(&t.name))
                    .cloned()
                    .collect(),
            )
        };
        *last = Some((all, offered.clone()));
        offered
    });
    let prompt = prompt.clone();
    let forward = tools.on_change().on(move |_| prompt.notify_change());
    Registration::merge(vec![provider, forward])
}

/// Points `fence` at the writable roots of `mode` for a session in `cwd`:
/// the same roots the command sandbox uses; open under
/// `danger-full-access`.
fn set_fence(fence: &Fence, mode: SandboxMode, cwd: &std::path::Path) {
    let roots = mode.confines().then(|| roots_of(mode, cwd));
    fence.set(mode.as_str(), roots);
}

/// The writable roots the command sandbox gives `mode` in `cwd`.
fn roots_of(mode: SandboxMode, cwd: &std::path::Path) -> Vec<std::path::PathBuf> {
    dsh_sandbox::SandboxPolicy::for_mode(mode, cwd, None)
        .writable_roots()
        .to_vec()
}

/// The longest [`Stack::shutdown`] waits for listeners (tool calls, hooks)
/// still running once its scope is closed.
const QUIESCE_BOUND: std::time::Duration = std::time::Duration::from_secs(2);

/// The id of the agent [`Stack::create_agent`] makes: front ends follow
/// its events (sub-agents have ids `agent-N`).
pub const MAIN_AGENT_ID: &str = "main";

/// The file tools' image policy: the catalogue asked about the model in
/// force (the `/model` switch in `model_override`, else `model`) at each
/// image read.
fn image_policy(
    catalogue: crate::catalogue::Catalogue,
    model: String,
    model_override: Arc<std::sync::Mutex<Option<String>>>,
) -> dsh_tool_fs::ImagePolicy {
    dsh_tool_fs::ImagePolicy::new(move || {
        let current = dsh_kernel::sync::lock(&model_override)
            .clone()
            .unwrap_or_else(|| model.clone());
        if catalogue.takes_images(&current) {
            dsh_tool_fs::ImageSupport::Accepted
        } else {
            dsh_tool_fs::ImageSupport::Refused { model: current }
        }
    })
}

/// Why a compaction cannot run on the offline echo model.
pub const NEEDS_MODEL: &str = "compaction needs a model to write the summary, and the offline echo model cannot: set DEEPSEEK_API_KEY (or [deepseek] api_key) and pick a model with --model";

/// The kind of the log-only event that records a model switch
/// ([`Stack::set_model`]): `{"model": …, "source": …}`.
pub const MODEL_CHANGE_EVENT: &str = "model/change";

/// Rewrites the model of requests on `default` to the override, when one
/// is set.
fn install_model_override(
    agents: &AgentRegistry,
    default: String,
    model: Arc<std::sync::Mutex<Option<String>>>,
) -> Registration {
    agents
        .hooks()
        .request
        .prepend(move |mut ctx: dsh_agent::RequestContext, next| {
            if let Some(m) = dsh_kernel::sync::lock(&model).clone() {
                if ctx.request.model == default {
                    ctx.request.model = m;
                }
            }
            next.run(ctx)
        })
}

/// The kind of the log-only event that records the permission mode.
pub const SANDBOX_MODE_EVENT: &str = "sandbox/mode";

/// Appends [`SANDBOX_MODE_EVENT`] (`{"mode": …, "source": …}`) to the
/// agent's session.
/// The session the proxy logs its refusals to, once one is announced.
type AnnouncedSession = Arc<std::sync::Mutex<Option<Arc<dsh_session::Session>>>>;

/// The session's network proxy for a `[sandbox] network` list: resolves
/// with the system's resolver; each refusal is logged to the announced
/// session as `sandbox/network-denied` `{host, port, reason}` and as a
/// warning event.
fn network_proxy(
    hosts: dsh_netproxy::Allowlist,
    announced: AnnouncedSession,
) -> dsh_netproxy::Proxy {
    let shown = hosts.clone();
    dsh_netproxy::Proxy::new(hosts, Arc::new(dsh_netproxy::SystemResolver)).with_observer(Arc::new(
        move |denial: &dsh_netproxy::Denial| {
            let explained = denial.explain(&shown);
            tracing::info!(
                event = crate::sandbox_layers::NETWORK_DENIED_EVENT,
                "{explained}"
            );
            if let Some(session) = dsh_kernel::sync::lock(&announced).as_ref() {
                session.append(EventPayload::Other {
                    kind: crate::sandbox_layers::NETWORK_DENIED_EVENT.to_string(),
                    data: serde_json::json!({
                        "host": denial.host,
                        "port": denial.port,
                        "reason": explained,
                    }),
                });
            }
        },
    ))
}

fn log_permission(agent: &dyn Agent, mode: SandboxMode, source: &str) {
    agent.session().append(EventPayload::Other {
        kind: SANDBOX_MODE_EVENT.to_string(),
        data: serde_json::json!({ "mode": mode.as_str(), "source": source }),
    });
}
