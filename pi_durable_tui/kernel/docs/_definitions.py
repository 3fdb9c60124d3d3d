"""Document definitions: typed JSON documents with scopes, history, forks and versions.

A definition (``define_doc``) names a document kind and how it lives
(reference section 1.5, rules R9 and R13-R20):

- ``scope``: ``session`` (one per session), ``conversation`` (one per
  conversation) or ``task`` (one per task, retired when the task ends);
- ``history`` for conversation documents: ``latest`` keeps only the current
  value, ``rewindable`` keeps every revision so ``snapshot_as_of`` can read the
  value at any entry;
- ``fork`` for conversation documents: what a fork starts with: ``initial``
  (nothing copied; created fresh on first access), ``current`` (the parent's value
  when the fork commits), ``asOf`` (the parent's value as of the fork entry;
  requires ``rewindable``);
- ``version`` with ``migrate(value, from_version)`` for older stored versions;
- ``family=True`` for documents keyed by a string (``initial(seed)`` builds a
  missing member from the first caller's seed);
- ``checkpoint_when(value, ops, deltas_since_base)``: store a base instead of a
  delta when it returns true.

The kernel checks every typed access against the stored incarnation (R15).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pi_durable_tui.kernel._errors import DocumentAccessError
from pi_durable_tui.storage.json_ops import Json, JsonObject, Op, check_json, copy_json
from pi_durable_tui.storage.records import (
    ConversationScope,
    DocAddress,
    DocScope,
    DocumentRecord,
    ForkPolicy,
    History,
    ScopeRef,
    SessionScope,
    TaskScope,
)

ScopeKind = Literal["session", "conversation", "task"]
CheckpointPredicate = Callable[[JsonObject, list[Op], int], bool]


@dataclass(frozen=True, eq=False)
class DocDefinition:
    """A typed document kind. Build it with ``define_doc``.

    Definitions compare by identity: two definitions of one kind are different
    tokens, which is how hot reload notices a new definition.
    """

    kind: str
    version: int
    scope: ScopeKind
    history: History
    fork: ForkPolicy
    initial: Callable[..., JsonObject]
    migrate: Callable[[JsonObject, int], JsonObject] | None
    checkpoint_when: CheckpointPredicate | None
    family: bool

    def make_scope(self, scope_id: int | None) -> DocScope:
        """Return the storage scope of this document for a session, conversation or task ID.

        Raises:
            DocumentAccessError: When ``scope_id`` does not fit the scope kind.
        """
        if self.scope == "session":
            if scope_id is not None:
                raise DocumentAccessError(f"Document {self.kind} is session-scoped; give no ID")
            return SessionScope()
        if scope_id is None:
            raise DocumentAccessError(f"Document {self.kind} is {self.scope}-scoped; give an ID")
        if self.scope == "conversation":
            return ConversationScope(scope_id, self.history, self.fork)
        return TaskScope(scope_id)

    def address(self, scope_id: int | None, key: str | None) -> DocAddress:
        """Return the logical address of a document of this kind.

        Raises:
            DocumentAccessError: When the key does not fit (family without key, or key
                on a single document), or the scope ID does not fit.
        """
        if self.family and key is None:
            raise DocumentAccessError(f"Document {self.kind} is a family; give a key")
        if not self.family and key is not None:
            raise DocumentAccessError(f"Document {self.kind} is not a family; give no key")
        return DocAddress(self.kind, ScopeRef.of(self.make_scope(scope_id)), key)

    def initial_value(self, seed: Json = None) -> JsonObject:
        """Return a fresh initial value, checked to be a strict JSON object."""
        value = self.initial(seed) if self.family else self.initial()
        if not isinstance(value, dict):
            raise DocumentAccessError(f"Document {self.kind} initial() must return a JSON object")
        check_json(value, f'docs["{self.kind}"]')
        return copy_json(value)  # type: ignore[return-value]

    def check_record(self, record: DocumentRecord) -> None:
        """Reject a stored incarnation whose scope or policies differ from this definition (R15).

        Raises:
            DocumentAccessError: On a mismatch.
        """
        scope = record.scope
        if scope.kind != self.scope:
            raise DocumentAccessError(
                f"Document {self.kind} is stored with scope {scope.kind}, not {self.scope}"
            )
        if isinstance(scope, ConversationScope) and (
            (scope.history, scope.fork) != (self.history, self.fork)
        ):
            raise DocumentAccessError(
                f"Document {self.kind} is stored with history {scope.history} and fork "
                f"{scope.fork}, not {self.history} and {self.fork}"
            )

    def upgrade(self, value: JsonObject, stored_version: int) -> JsonObject:
        """Return the value at this definition's version, migrating an older one (R15).

        Raises:
            DocumentAccessError: When the stored version is newer, or older without
                ``migrate``, or ``migrate`` does not return a JSON object.
        """
        if stored_version == self.version:
            return value
        if stored_version > self.version:
            raise DocumentAccessError(
                f"Document {self.kind} is stored at version {stored_version}, newer than "
                f"this definition's version {self.version}"
            )
        if self.migrate is None:
            raise DocumentAccessError(
                f"Document {self.kind} is stored at version {stored_version} and its "
                f"definition (version {self.version}) has no migrate"
            )
        migrated = self.migrate(copy_json(value), stored_version)  # type: ignore[arg-type]
        if not isinstance(migrated, dict):
            raise DocumentAccessError(f"Document {self.kind} migrate() must return a JSON object")
        check_json(migrated, f'docs["{self.kind}"]')
        return migrated

    @property
    def current_only(self) -> bool:
        """Whether only the current value is kept (historical reads reject, R20)."""
        return not (self.scope == "conversation" and self.history == "rewindable")


def define_doc(
    kind: str,
    *,
    initial: Callable[..., JsonObject],
    version: int = 1,
    scope: ScopeKind = "conversation",
    history: History = "latest",
    fork: ForkPolicy = "initial",
    migrate: Callable[[JsonObject, int], JsonObject] | None = None,
    checkpoint_when: CheckpointPredicate | None = None,
    family: bool = False,
) -> DocDefinition:
    """Define a typed document kind.

    Args:
        kind: The document's kind name, for example ``pi.live``.
        initial: Builds the initial value: ``initial()``, or ``initial(seed)`` for a family.
        version: A positive integer; raise it when the value's shape changes.
        scope: ``session``, ``conversation`` or ``task``.
        history: ``latest`` or ``rewindable`` (conversation documents only).
        fork: ``initial``, ``current`` or ``asOf`` (conversation documents only;
            ``asOf`` requires ``rewindable``).
        migrate: ``migrate(value, from_version)`` returns the value at ``version``.
        checkpoint_when: ``checkpoint_when(value, ops, deltas_since_base)``; true
            stores a complete base instead of a delta (R13).
        family: Whether documents of this kind are keyed by a string.

    Returns:
        The definition token.

    Raises:
        ValueError: For an invalid combination of options.
    """
    if not kind or not isinstance(kind, str):
        raise ValueError("Document kind must be a non-empty string")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"Document {kind} version must be a positive integer")
    if scope not in ("session", "conversation", "task"):
        raise ValueError(f"Document {kind} scope must be session, conversation or task")
    if scope != "conversation" and (history != "latest" or fork != "initial"):
        raise ValueError(f"Document {kind}: only conversation documents have history or fork")
    if fork == "asOf" and history != "rewindable":
        raise ValueError(f"Document {kind}: fork asOf requires history rewindable")
    return DocDefinition(
        kind=kind,
        version=version,
        scope=scope,
        history=history,
        fork=fork,
        initial=initial,
        migrate=migrate,
        checkpoint_when=checkpoint_when,
        family=family,
    )
