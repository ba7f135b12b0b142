"""Reload server: loads checkpoints in a fresh interpreter, one forked child per checkpoint.

Self-contained on purpose: it runs under ``--itera-python`` (the training interpreter), which
may not have pytest-itera installed.  The client runs ``__main__.py`` by path, which loads this
folder as a package of its own (``_itera_reload_server``): its modules import each other
relatively and the reload folder's standalone modules (``formats.py``, ``probe.py``,
``sandbox.py``) by path, once each (:mod:`.siblings`); never ``pytest_itera`` nor pytest.
Only the standard library, torch and, when present, numpy and safetensors are imported.
Never ``weights_only=False``, in any code path.

Protocol (JSON lines): the server first writes the probe's line (``probe.py``: the versions,
read without importing torch), then, torch imported, a ``hello`` line (interpreter and
library versions); then for each request line ``{"id", "path", "timeout", "memory_limit"}`` on stdin
it gives the checkpoint to a forked child that loads it and writes one JSON verdict to a pipe,
and the server answers one JSON line, with the request's id, on stdout.  Up to ``JOBS``
(the first argument, default 1) children run at a time, so a client may send many requests
before reading: replies then come in the order the children finish.  A request may carry
``"debug": "hang" | "crash" | "spin" | "escape"``: test-only, it makes the child sleep,
abort or burn CPU before loading, to prove that a hang, crash or CPU hog yields one clear
verdict and the server keeps serving, or try what a hostile payload would (sockets, a write,
a fork: :func:`.child.escape_attempts`) to prove the sandbox (``sandbox.py``) denies it; the
test-only ``"layers"`` and ``"cpu_seconds"`` pick the sandbox layers and its CPU limit.
Every verdict carries ``"sandbox"``: the layers active in its child and why any is missing.
EOF on stdin ends the server.

Modules, from the process down to the bytes:

* ``__main__``: the entry point; ``lifeline``: dying with the client and the server;
  ``siblings``: the reload folder's standalone modules, loaded by path;
* ``serve``: the request loop, the line protocol, ``hello``, warm-up;
  ``child``: one forked loader per checkpoint, its sandbox and its verdict;
* ``folder_formats``: HF Trainer, accelerate, saved models, PEFT, shards; ``dcp``: DCP folders;
* ``file_formats``: a single torch (plain, Lightning) or safetensors file;
* ``parts``: whether a value is a restorable state of a resume part;
* ``finite``: non-finite model weights; ``loading``: ``torch.load(weights_only=True)`` and
  what its failures mean;
* ``archives``: a torch zip's or a legacy file's structure and declared storages;
  ``pickles``: the globals a pickle would call, found without unpickling;
* ``verdict``: what the child reports (``Findings``) and why it refuses (``Refused``).
"""
