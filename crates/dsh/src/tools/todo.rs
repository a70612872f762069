//! `todo_write`: the agent's todo list. Each call replaces the whole list;
//! the list lives in the session log as [`TODO_UPDATE_EVENT`] events, so a
//! resumed session has its last list ([`current_todos`]) and front ends
//! show it as it changes ([`checklist`]).

use std::sync::Arc;

use dsh_agent::Agent;
use dsh_llm::ContentBlock;
use dsh_session::{EventPayload, Session};
use dsh_tools::{ArgsTool, Tool, ToolArgs, ToolContext, ToolError};
use serde::{Deserialize, Serialize};

/// Kind of the log-only event holding the list after a `todo_write`:
/// `{"todos": [{"content": …, "status": "pending" | "in_progress" |
/// "completed"}, …]}`, in the model's order.
pub const TODO_UPDATE_EVENT: &str = "todo/update";

/// Where an item stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToolArgs)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on now.
    InProgress,
    /// Done.
    Completed,
}

impl TodoStatus {
    /// The checklist box: `[ ]`, `[~]` or `[x]`.
    pub fn glyph(self) -> &'static str {
        match self {
            TodoStatus::Pending => "[ ]",
            TodoStatus::InProgress => "[~]",
            TodoStatus::Completed => "[x]",
        }
    }
}

/// One item of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToolArgs)]
#[serde(deny_unknown_fields)]
pub struct TodoItem {
    /// What is to be done, one short imperative line.
    #[tool(min_length = 1)]
    pub content: String,
    /// `pending`, `in_progress` (what you are doing now) or `completed`.
    pub status: TodoStatus,
}

/// Arguments of `todo_write`.
#[derive(Debug, Serialize, Deserialize, ToolArgs)]
pub struct TodoWriteArgs {
    /// The whole list, in order; it replaces the previous one (an empty
    /// list clears it).
    pub todos: Vec<TodoItem>,
}

const DESCRIPTION: &str = "Keep a todo list for multi-step work: each call replaces the whole list. Use it for tasks of three or more steps: write the steps first, mark one in_progress before you start it and completed as soon as it is done, add steps you discover. At most one item is in_progress at a time. The user sees the list as it changes.";

/// The `todo_write` tool. With `allow_parallel_in_progress` (`[todo]
/// allow_parallel_in_progress` in dsh.toml) more than one item may be
/// `in_progress`; otherwise such a list is refused with
/// `TODO_TOO_MANY_IN_PROGRESS` and the previous list stays.
pub fn todo_write_tool(allow_parallel_in_progress: bool) -> Arc<dyn Tool> {
    TodoWrite {
        allow_parallel_in_progress,
    }
    .into_tool()
    .into_arc()
}

struct TodoWrite {
    allow_parallel_in_progress: bool,
}

impl ArgsTool for TodoWrite {
    type Args = TodoWriteArgs;

    fn name(&self) -> &str {
        "todo_write"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    async fn run(
        self: Arc<Self>,
        args: TodoWriteArgs,
        ctx: ToolContext,
    ) -> Result<Vec<ContentBlock>, ToolError> {
        let todos = args.todos;
        let busy: Vec<String> = todos
            .iter()
            .enumerate()
            .filter(|(_, t)| t.status == TodoStatus::InProgress)
            .map(|(i, t)| format!("#{} {:?}", i + 1, t.content))
            .collect();
        if busy.len() > 1 && !self.allow_parallel_in_progress {
            return Err(ToolError::new(
                dsh_protocol::codes::TODO_TOO_MANY_IN_PROGRESS,
                format!(
                    "{} items are in_progress ({}); at most one may be: keep the one you are working on in_progress and mark the others pending or completed. The list was not changed.",
                    busy.len(),
                    busy.join(", ")
                ),
            ));
        }
        let Some(agent) = ctx.get::<Arc<dyn Agent>>() else {
            return Err(ToolError::failed(
                "todo_write keeps the list in the agent's session, and this call has no agent",
            ));
        };
        agent.session().append(EventPayload::Other {
            kind: TODO_UPDATE_EVENT.to_string(),
            data: serde_json::json!({ "todos": todos }),
        });
        Ok(vec![ContentBlock::text(result_text(&todos))])
    }
}

/// The result text: `Todo list updated (done/total completed):` and the
/// [`checklist`]; `Todo list cleared (no items).` for an empty list.
pub fn result_text(todos: &[TodoItem]) -> String {
    if todos.is_empty() {
        return "Todo list cleared (no items).".to_string();
    }
    format!(
        "Todo list updated ({}):\n{}",
        counts(todos),
        checklist(todos)
    )
}

/// `done/total completed`.
pub fn counts(todos: &[TodoItem]) -> String {
    let done = todos
        .iter()
        .filter(|t| t.status == TodoStatus::Completed)
        .count();
    format!("{done}/{} completed", todos.len())
}

/// The list as lines `[x] …`, `[~] …`, `[ ] …` in order, no trailing
/// newline.
pub fn checklist(todos: &[TodoItem]) -> String {
    todos
        .iter()
        .map(|t| format!("{} {}", t.status.glyph(), t.content))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The list a [`TODO_UPDATE_EVENT`]'s data holds; `None` when it does not
/// parse (a foreign writer).
pub fn todos_of(data: &serde_json::Value) -> Option<Vec<TodoItem>> {
    serde_json::from_value(data.get("todos")?.clone()).ok()
}

/// The agent's current list: the last [`TODO_UPDATE_EVENT`] of its
/// session (a resumed session's included); empty when there is none.
pub fn current_todos(session: &Session) -> Vec<TodoItem> {
    session
        .events()
        .iter()
        .rev()
        .find_map(|e| match &e.data {
            EventPayload::Other { kind, data } if kind == TODO_UPDATE_EVENT => todos_of(data),
            _ => None,
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn todo_args_do_not_drift() {
        dsh_tools::testing::assert_no_drift::<TodoWriteArgs>(256);
    }

    #[test]
    fn the_result_is_a_checklist_with_counts() {
        let item = |content: &str, status| TodoItem {
            content: content.into(),
            status,
        };
        let todos = [
            item("Read the code", TodoStatus::Completed),
            item("Write the tool", TodoStatus::InProgress),
            item("Test it", TodoStatus::Pending),
        ];
        assert_eq!(
            result_text(&todos),
            "Todo list updated (1/3 completed):\n[x] Read the code\n[~] Write the tool\n[ ] Test it"
        );
        assert_eq!(result_text(&[]), "Todo list cleared (no items).");
    }
}
