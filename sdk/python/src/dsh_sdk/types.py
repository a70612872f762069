"""The protocol's types, as `dsh serve` sends and takes them.

Written from the protocol's JSON Schema (`GET /api/protocol`, generated
from `crates/dsh-server/src/protocol.rs`). Field names are the wire's
(camelCase); an optional field is absent, never null. Results are plain
dicts typed as these TypedDicts: what the server sent, unchanged.
"""

from __future__ import annotations

from typing import Any, List, Literal, Tuple, TypedDict, Union

# Optional fields are declared in `total=False` subclasses: Python 3.10
# has no `NotRequired`.

PermissionMode = Literal["read-only", "workspace-write", "danger-full-access"]
"""The permission modes `session/set_permission` and `session/create` take."""

DecisionName = Literal["allow_once", "allow_always", "reject", "cancelled"]
"""How an approval question can be answered."""


class _DecisionBase(TypedDict):
    decision: DecisionName


class Decision(_DecisionBase, total=False):
    """An answer to an approval question; `note` goes with `reject` only."""

    note: str


class QuestionAnswer(TypedDict, total=False):
    """The answer to one `ask_user` question: option indexes (from 0; one
    unless the question is `multiSelect`), free text, both, or neither
    (`{}`: skipped)."""

    selected: List[int]
    text: str


class _QuestionReplyBase(TypedDict):
    outcome: Literal["answered", "declined"]


class QuestionReply(_QuestionReplyBase, total=False):
    """The reply to a `question_asked` event: `{"outcome": "answered",
    "answers": [...]}` (one per question, in order) or `{"outcome":
    "declined"}`."""

    answers: List[QuestionAnswer]


class _QuestionChoiceBase(TypedDict):
    label: str


class QuestionChoice(_QuestionChoiceBase, total=False):
    """One choice of an `ask_user` question."""

    description: str


class _QuestionSpecBase(TypedDict):
    question: str


class QuestionSpec(_QuestionSpecBase, total=False):
    """One `ask_user` question (the person may always answer in free
    text); an answer selects `options` by index."""

    header: str
    options: List[QuestionChoice]
    multiSelect: bool


class _CommandInfoBase(TypedDict):
    name: str
    description: str


class CommandInfo(_CommandInfoBase, total=False):
    """One chat command `session/command` runs: its `name` without the
    slash, what it does, and `hint`, the argument it takes when it takes
    one (always optional); `scope` (`project` or `user`) marks a custom
    command's origin and is absent for a built-in one."""

    hint: str
    scope: str


class InitializeResult(TypedDict):
    """`initialize`'s result. `commands`: the chat commands, in `/help`
    order."""

    server: str
    version: str
    protocol: int
    methods: List[str]
    commands: List[CommandInfo]


class _SessionInfoBase(TypedDict):
    id: str
    cwd: str
    model: str
    models: List[str]
    permission: str
    planMode: bool
    status: str
    inputTokens: int
    outputTokens: int


class SessionInfo(_SessionInfoBase, total=False):
    """What an open session is now. `context` is `[tokens, window]`;
    `models`: the models `session/set_model` accepts."""

    log: str
    context: Tuple[int, int]
    cacheReadTokens: int
    title: str


class _SessionResultBase(TypedDict):
    sessionId: str
    info: SessionInfo


class SessionResult(_SessionResultBase, total=False):
    """A session as `session/create`, `load`, `fork` and `info` return it;
    `commands`: its custom commands (Markdown command files), which
    `session/command` runs like the built-in ones."""

    commands: List[CommandInfo]


class OpenSession(TypedDict):
    """An open session in `session/list`."""

    sessionId: str
    info: SessionInfo


class _SavedSessionBase(TypedDict):
    sessionId: str
    createdMs: int
    turns: int
    tokens: int


class SavedSession(_SavedSessionBase, total=False):
    """A saved session in `session/list`."""

    title: str
    firstPrompt: str


class ListResult(TypedDict):
    """`session/list`'s result: the open sessions and the saved ones."""

    open: List[OpenSession]
    saved: List[SavedSession]


class SubscribeResult(TypedDict):
    """`session/subscribe`'s result."""

    nextSeq: int
    liveFrom: int


class Changed(TypedDict):
    """`session/set_plan_mode`'s result."""

    changed: bool


class Text(TypedDict):
    """`session/compact`'s result."""

    text: str


class CommandResult(TypedDict):
    """`session/command`'s result."""

    text: str
    failed: bool
    exit: bool


class FilesResult(TypedDict):
    """`session/files`' result: paths relative to the workspace."""

    paths: List[str]


class _EventsPageBase(TypedDict):
    events: List["Event"]
    nextSeq: int


class EventsPage(_EventsPageBase, total=False):
    """`session/events`' result; `oldestSeq` when events were dropped."""

    oldestSeq: int


class LogEvent(TypedDict):
    """One event of a session's log (a JSONL line)."""

    type: str
    seq: int
    time: int
    data: Any


class LogPage(TypedDict):
    """`session/log`'s result."""

    events: List[LogEvent]
    nextSeq: int


# ---------------------------------------------------------------------------
# Events: `{"seq", "time", "type", ...}`, the `event` of `session.event`.


class _EventBase(TypedDict):
    seq: int
    time: int


class _SessionStartedBase(_EventBase):
    type: Literal["session_started"]
    sessionId: str
    model: str
    permission: str
    planMode: bool
    cwd: str
    resumed: bool


class SessionStarted(_SessionStartedBase, total=False):
    """First event; again after `/clear` (`cleared`: the old log's id)."""

    cleared: str


class Warning(_EventBase):  # noqa: A001 - the event's own name
    """An ignored config key, a repaired log, a server that did not start."""

    type: Literal["warning"]
    message: str


class MessageSource(TypedDict, total=False):
    """Who sent a message: `{"kind": "user"}`, a plugin, an agent."""

    kind: str
    plugin: str
    agent_id: str


class _UserMessageBase(_EventBase):
    type: Literal["user_message"]
    text: str
    source: MessageSource


class UserMessage(_UserMessageBase, total=False):
    """A message started (or steered) a turn."""

    steering: bool


class TurnStarted(_EventBase):
    """A turn started."""

    type: Literal["turn_started"]
    turn: int


class MessageDelta(_EventBase):
    """Answer text as the model streams it."""

    type: Literal["message_delta"]
    text: str


class ReasoningDelta(_EventBase):
    """Reasoning text as the model streams it."""

    type: Literal["reasoning_delta"]
    text: str


class MessageCompleted(_EventBase):
    """A step's message is complete."""

    type: Literal["message_completed"]
    text: str


class ToolStarted(_EventBase):
    """The model called a tool; `arguments` is JSON text."""

    type: Literal["tool_started"]
    callId: str
    name: str
    arguments: str
    title: str


class ToolRunning(_EventBase):
    """The call passed the boundary and approval."""

    type: Literal["tool_running"]
    callId: str


class _FileDiffBase(TypedDict):
    path: str
    newText: str


class FileDiff(_FileDiffBase, total=False):
    """A file change (`oldText` absent for a new file)."""

    oldText: str


class _ToolFinishedBase(_EventBase):
    type: Literal["tool_finished"]
    callId: str
    name: str
    isError: bool
    output: str


class ToolFinished(_ToolFinishedBase, total=False):
    """A call's result."""

    diff: FileDiff


class TodoEntry(TypedDict):
    """One item of the todo list."""

    content: str
    status: str


class Todos(_EventBase):
    """The todo list changed."""

    type: Literal["todos"]
    items: List[TodoEntry]


class _ApprovalAskedBase(_EventBase):
    type: Literal["approval_asked"]
    approvalId: str
    kind: Literal["tool", "plan"]
    callId: str
    tool: str
    arguments: str
    summary: str


class ApprovalAsked(_ApprovalAskedBase, total=False):
    """A question for the person: answer it with `Client.answer`."""

    detail: str
    justification: str
    suggestedRule: str


class ApprovalDecided(_EventBase):
    """A question was answered (or withdrawn: `cancelled`)."""

    type: Literal["approval_decided"]
    approvalId: str
    decision: Decision


class QuestionAsked(_EventBase):
    """The model asks the person (`ask_user`): reply with
    `Client.answer_question`."""

    type: Literal["question_asked"]
    questionId: str
    callId: str
    questions: List[QuestionSpec]


class QuestionAnswered(_EventBase):
    """The questions were answered or declined (a withdrawn question reads
    as declined)."""

    type: Literal["question_answered"]
    questionId: str
    reply: QuestionReply


class Status(_EventBase):
    """The agent's status: `idle`, `running` or `disposed`."""

    type: Literal["status"]
    status: str


class _ActivityBase(_EventBase):
    type: Literal["activity"]
    state: str


class Activity(_ActivityBase, total=False):
    """What the agent is doing now, told when it changes: `thinking`,
    `streaming`, `running` (`detail`: the tool call's title), `waiting`
    (for an approval), `idle`."""

    detail: str


class _UsageBase(_EventBase):
    type: Literal["usage"]
    inputTokens: int
    outputTokens: int


class Usage(_UsageBase, total=False):
    """A request's token usage."""

    cacheReadTokens: int


class Context(_EventBase):
    """The context meter after a request."""

    type: Literal["context"]
    tokens: int
    window: int


class TurnEndReason(TypedDict, total=False):
    """`{"kind": "completed" | "aborted" | "error" | "disposed" | ...}`."""

    kind: str
    reason: str
    message: str
    code: str


class _TurnEndedBase(_EventBase):
    type: Literal["turn_ended"]
    turn: int
    reason: TurnEndReason
    durationMs: int
    outputTokens: int


class TurnEnded(_TurnEndedBase, total=False):
    """A turn ended, with its timings. The session takes the next prompt
    once its `status` event says `idle`."""

    finish: str
    firstTokenMs: int
    tokensPerSecond: float
    cacheHitRate: float


class _ErrorBase(_EventBase):
    type: Literal["error"]
    message: str


class Error(_ErrorBase, total=False):
    """An error was logged."""

    code: str


class ModelChanged(_EventBase):
    """The model changed."""

    type: Literal["model_changed"]
    model: str


class PermissionChanged(_EventBase):
    """The permission mode changed."""

    type: Literal["permission_changed"]
    mode: str


class PlanModeChanged(_EventBase):
    """Plan mode was turned on or off."""

    type: Literal["plan_mode_changed"]
    on: bool


class Compacted(_EventBase):
    """The history was compacted."""

    type: Literal["compacted"]
    tokensAfter: int


class FilesRestored(_EventBase):
    """Files were set back to a checkpoint (`/undo`, `/redo`, `/rewind`)."""

    type: Literal["files_restored"]
    action: str
    turn: int
    restored: list[str]
    deleted: list[str]
    userChanged: list[str]


class Rewound(_EventBase):
    """The conversation went back to before turn `toTurn`."""

    type: Literal["rewound"]
    toTurn: int


class TitleChanged(_EventBase):
    """The session got a title."""

    type: Literal["title_changed"]
    title: str


class Log(_EventBase):
    """A log event (only when subscribed with `log=True`)."""

    type: Literal["log"]
    event: LogEvent


class Closed(_EventBase):
    """The session closed: the last event of its stream."""

    type: Literal["closed"]
    reason: str


Lost = TypedDict("Lost", {"type": Literal["lost"], "from": int, "to": int})
"""Not a server event: the `session.lost` notification in the stream.
Events `from` to `to` (exclusive) were dropped because this client read
too slowly; `Client.read_log` still has them."""

Event = Union[
    SessionStarted,
    Warning,
    UserMessage,
    TurnStarted,
    MessageDelta,
    ReasoningDelta,
    MessageCompleted,
    ToolStarted,
    ToolRunning,
    ToolFinished,
    Todos,
    ApprovalAsked,
    ApprovalDecided,
    QuestionAsked,
    QuestionAnswered,
    Status,
    Activity,
    Usage,
    Context,
    TurnEnded,
    Error,
    ModelChanged,
    PermissionChanged,
    PlanModeChanged,
    Compacted,
    FilesRestored,
    Rewound,
    TitleChanged,
    Log,
    Closed,
]
"""Every event of a session's stream, told apart by `type`."""

StreamItem = Union[Event, Lost]
"""What `EventStream` yields: an event, or a `Lost` gap."""

EVENT_TYPES: Tuple[str, ...] = (
    "session_started",
    "warning",
    "user_message",
    "turn_started",
    "message_delta",
    "reasoning_delta",
    "message_completed",
    "tool_started",
    "tool_running",
    "tool_finished",
    "todos",
    "approval_asked",
    "approval_decided",
    "question_asked",
    "question_answered",
    "status",
    "activity",
    "usage",
    "context",
    "turn_ended",
    "error",
    "model_changed",
    "permission_changed",
    "plan_mode_changed",
    "compacted",
    "files_restored",
    "rewound",
    "title_changed",
    "log",
    "closed",
)
"""The `type` of every event, in the protocol's order."""
