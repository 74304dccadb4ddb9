"""histtrim: the executable reference for how an agent runtime manages conversation history.

The one re-export point: the names that implement the spec's rules, with their result and
error types. Everything else is imported from the module that defines it."""

from importlib import metadata as _metadata

from .agent.calls import TurnOutcome
from .agent.ledger import TokenLedger
from .agent.legacy import LEGACY_TRIM_LOG, LegacyRunResult, legacy_run
from .agent.providers import ContextOverflowError, Provider, ProviderReply, ProviderRequest
from .agent.runtime import Agent, UnrecoverableContextOverflow
from .agent.tools import Tool, ToolOutput
from .capacity import CapacityReport, ContextCapacityExceeded, capacity_report, check_request
from .carriers import is_loadable_target, parse_tool_result, to_chat_messages
from .config import (
    DEFAULT_MAX_HISTORY_TURNS,
    FALLBACK_CONTEXT_TOKENS,
    AgentConfig,
    HistoryPruning,
    ProviderProfile,
    RuntimeProfile,
)
from .estimate import (
    IMAGE_TOKENS,
    dispatched_images,
    estimate_history_tokens,
    message_cost,
    message_costs,
    text_tokens,
)
from .events import ClientTransport, EventBus, HistoryTrimmed, Observer, TrimReason
from .messages import (
    BREADCRUMB,
    TOOL_RESULTS_PREFIX,
    AssistantToolCalls,
    Attachment,
    ChatMessage,
    ConversationMessage,
    ToolCall,
    ToolResultMessage,
    ToolResults,
    conversation_rows,
)
from .pairing import PairingProblem, SweepResult, sweep_orphans, validate_tool_pairing
from .policy import ColdCache, Policy, ToolContext
from .reported_usage import (
    HiddenPrefix,
    ReportedTrim,
    fit_hidden_prefix,
    refused_report,
    reported_input_tokens,
    trim_to_reported_budget,
    trim_to_reported_budget_with_crumb,
    usable_report,
)
from .route import ResolvedRuntime, resolve_runtime, select_route
from .safety import (
    DEFAULT_CHANNEL_CACHE_ROWS,
    DEFAULT_MAX_TOOL_RESULT_CHARS,
    ChannelSenderCache,
    cap_tool_result,
)
from .tool_context import (
    ToolContextEdit,
    clear_tool_results,
    collapse_tool_context,
    edit_tool_context,
)
from .trim import (
    TrimResult,
    TurnCountTrimResult,
    drop_oldest_whole_turn,
    insert_breadcrumb,
    trim_conversation_to_recent_turns,
    trim_to_recent_turn_count,
    trim_to_recent_turns,
)
from .turns import TurnIndex, index_turns, leading_system_count, opens_turn

try:
    __version__ = _metadata.version("histtrim")
    """The installed distribution's version (pyproject's `version`)."""
except _metadata.PackageNotFoundError:  # a source tree on sys.path, never installed
    __version__ = "0+unknown"

__all__ = [
    "BREADCRUMB",
    "DEFAULT_CHANNEL_CACHE_ROWS",
    "DEFAULT_MAX_HISTORY_TURNS",
    "DEFAULT_MAX_TOOL_RESULT_CHARS",
    "FALLBACK_CONTEXT_TOKENS",
    "IMAGE_TOKENS",
    "LEGACY_TRIM_LOG",
    "TOOL_RESULTS_PREFIX",
    "Agent",
    "AgentConfig",
    "AssistantToolCalls",
    "Attachment",
    "CapacityReport",
    "ChannelSenderCache",
    "ChatMessage",
    "ClientTransport",
    "ColdCache",
    "ContextCapacityExceeded",
    "ContextOverflowError",
    "ConversationMessage",
    "EventBus",
    "HiddenPrefix",
    "HistoryPruning",
    "HistoryTrimmed",
    "LegacyRunResult",
    "Observer",
    "PairingProblem",
    "Policy",
    "Provider",
    "ProviderProfile",
    "ProviderReply",
    "ProviderRequest",
    "ReportedTrim",
    "ResolvedRuntime",
    "RuntimeProfile",
    "SweepResult",
    "TokenLedger",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolContextEdit",
    "ToolOutput",
    "ToolResultMessage",
    "ToolResults",
    "TrimReason",
    "TrimResult",
    "TurnCountTrimResult",
    "TurnIndex",
    "TurnOutcome",
    "UnrecoverableContextOverflow",
    "cap_tool_result",
    "capacity_report",
    "check_request",
    "clear_tool_results",
    "collapse_tool_context",
    "conversation_rows",
    "dispatched_images",
    "drop_oldest_whole_turn",
    "edit_tool_context",
    "estimate_history_tokens",
    "fit_hidden_prefix",
    "index_turns",
    "insert_breadcrumb",
    "is_loadable_target",
    "leading_system_count",
    "legacy_run",
    "message_cost",
    "message_costs",
    "opens_turn",
    "parse_tool_result",
    "refused_report",
    "reported_input_tokens",
    "resolve_runtime",
    "select_route",
    "sweep_orphans",
    "text_tokens",
    "to_chat_messages",
    "trim_conversation_to_recent_turns",
    "trim_to_recent_turn_count",
    "trim_to_recent_turns",
    "trim_to_reported_budget",
    "trim_to_reported_budget_with_crumb",
    "usable_report",
    "validate_tool_pairing",
]
