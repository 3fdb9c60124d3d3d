"""Documents: typed JSON beside the transcript, changed inside commits (R9-R20, R124).

A part of the kernel, not a public face: authors import the public names
(``define_doc``, ``DocDefinition``, ``DocChange``, ``DocumentState``,
``DocumentWatch``, ``WatchFrame``) from ``pi_durable_tui.kernel``. The commit
line uses the rest.

Its private modules, lowest first (each imports only the ones before it):

- ``_definitions``: ``define_doc`` and ``DocDefinition`` (scopes, history, fork
  policies, versions and migrations);
- ``_diff``: the operations of a commit, derived by diffing a draft against its base;
- ``_drafts``: a document acquired by one commit, and the ``DocChange`` it becomes;
- ``_forks``: what a fork copies, by fork policy (R17, R18, R26);
- ``_store``: the committed documents of a Session, cached in front of storage;
- ``_tx_documents``: what one commit does to documents (acquire, retire, finish);
- ``_observation``: document states and watches, fed by publications (R124).

Imports run one way: this package imports ``kernel._errors`` and the storage
layer, nothing else of the kernel.
"""

from pi_durable_tui.kernel.docs._definitions import DocDefinition, define_doc
from pi_durable_tui.kernel.docs._diff import diff_json
from pi_durable_tui.kernel.docs._drafts import DocChange
from pi_durable_tui.kernel.docs._forks import ForkPlanner, copy_address
from pi_durable_tui.kernel.docs._observation import (
    MAX_PENDING_FRAMES,
    DocumentState,
    DocumentWatch,
    Observation,
    WatchFrame,
)
from pi_durable_tui.kernel.docs._store import DocumentStore
from pi_durable_tui.kernel.docs._tx_documents import TxDocuments

__all__ = [
    "MAX_PENDING_FRAMES",
    "DocChange",
    "DocDefinition",
    "DocumentState",
    "DocumentStore",
    "DocumentWatch",
    "ForkPlanner",
    "Observation",
    "TxDocuments",
    "WatchFrame",
    "copy_address",
    "define_doc",
    "diff_json",
]
