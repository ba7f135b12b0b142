"""The campaign's files that reload instructions name, and how each is named.

Instructions are Markdown with shell sessions and Python snippets; a path in them is a file
the reload reads (``torch.load("runs/x.pt")``, ``--checkpoint runs/x.pt``, a copy's
source), a file a command writes (``--output``, ``>``, ``torch.save(..., path)``, a copy's
destination, a positional argument after the input), or only mentioned. The tables below
are the calls, commands and flags this reading knows; they are data, not judgement.

:func:`missing_paths` says which named files of the campaign the folder does not hold, and
whether the instructions unambiguously *read* each one (``decides``: a file that cannot be
found cannot be reloaded) or only mention it (a doubtful reading that advises). A path that
a command shown writes (or one under a folder a command creates) is never missing; after a
``cd`` out of the campaign, an archive's extraction or a fresh clone, paths are relative to
somewhere else and advise at most.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass

__all__ = ["MissingPath", "missing_paths"]

# -- the tables ----------------------------------------------------------------------------

# Calls whose path arguments the reload reads (the last dotted name of the call).
READERS = frozenset({
    "load", "load_file", "safe_open", "from_pretrained", "load_adapter", "load_state",
    "load_state_dict", "load_from_checkpoint", "load_checkpoint", "load_model",
    "load_sharded_checkpoint", "FileSystemReader", "open", "read_csv", "read_json",
    "read_parquet", "read_text", "read_bytes", "load_dataset", "InferenceSession",
    "load_weights", "restore", "from_file", "get_peft_model_state_dict",
})
# Calls whose path arguments the reload writes (a folder argument: every file under it).
WRITERS = frozenset({
    "save", "save_file", "save_pretrained", "save_model", "save_state", "save_checkpoint",
    "to_csv", "to_json", "to_parquet", "write_text", "write_bytes", "savez", "export",
    "FileSystemWriter", "save_to_disk", "dump",
})
# Shell commands: the copies (sources read, the last argument written), the commands that
# read every argument, those that create what they name, those that leave unknown files.
COPIES = frozenset({"cp", "mv", "rsync", "ln", "scp", "install"})
READ_COMMANDS = frozenset({
    "cat", "head", "tail", "less", "more", "sha256sum", "shasum", "md5sum", "b2sum", "jq",
    "wc", "file", "stat", "du", "ls", "diff", "cmp", "zcat", "xxd",
})
CREATES = frozenset({"mkdir", "touch"})
UNPACKS = frozenset({"tar", "unzip", "7z", "gunzip", "git", "huggingface-cli", "hf", "wget",
                     "curl", "aws", "gsutil", "rclone", "dvc", "git-lfs"})
CHANGES_FOLDER = frozenset({"cd", "pushd", "popd"})
# Words before the program: a prompt, a launcher, an environment assignment.
PROMPTS = frozenset({"$", "%", "#", ">", ">>>", "..."})
LAUNCHERS = frozenset({
    "python", "python3", "py", "uv", "run", "poetry", "pipenv", "conda", "accelerate",
    "launch", "torchrun", "deepspeed", "bash", "sh", "zsh", "env", "sudo", "time", "nohup",
    "exec", "srun", "mpirun", "lightning", "pdm", "hatch",
})
# A flag whose value the reload reads, or writes (looked at first), in the four languages:
# "--output", "--save-dir", "--sortie", "--ausgabe", "--salida"; "--checkpoint", "--modele".
OUTPUT_FLAG = re.compile(r"(?i)-(?:o|O)|--[\w-]*(?:out|save|dest|export|target|write|log|"
                         r"report|local[-_]dir|merged?|sortie|enregistr|ausgabe|ziel|speicher|"
                         r"salida|guardar|destino)[\w-]*")
INPUT_FLAG = re.compile(r"(?i)-i|--[\w-]*(?:checkpoint|ckpt|resume|weights|adapter|model|"
                        r"load|input|peft|lora|init|base|config|state|restore|entr[ée]e|"
                        r"poids|reprise|eingabe|gewichte|modell|entrada|pesos|modelo)[\w-]*")

# -- the syntax ----------------------------------------------------------------------------

# A file path of the campaign as instructions write it: relative, with a folder and an
# extension ("runs/control/last.pt"); not a part of a URL, a dotted module, a variable, a
# glob or a template ("runs/<run>/last.pt", "$OUT/runs/x.pt", "runs/*/last.pt").
_PATH = re.compile(r"(?<![\w./:<>{}$*?~\[-])((?:\./)?(?:[\w.-]+/)+[\w.-]*\w\.[A-Za-z0-9]{1,12})"
                   r"(?![\w/<>{}*?\[])")
# A path a shell redirection or tee writes, right before the path.
_REDIRECT = re.compile(r"(?:(?<![<0-9&])>>?|&>|(?<![\w.-])tee(?:[ \t]+-a)?)[ \t]*[`'\"]?$")
_READ_REDIRECT = re.compile(r"(?<!<)<[ \t]*[`'\"]?$")
_SEPARATORS = re.compile(r"&&|\|\||[;|]")
_WORD = re.compile(r"""(?:[^\s'"`]+|'[^']*'|"[^"]*"|`[^`]*`)+""")
_CALL = re.compile(r"([A-Za-z_][\w.]*)\s*$")
_WRITE_MODE = re.compile(r"""\s*,\s*(?:mode\s*=\s*)?['"][wax]""")
_FENCE = re.compile(r"\s*(?:```|~~~)")


@dataclass(frozen=True)
class MissingPath:
    """A campaign path the instructions name that the folder does not hold."""

    path: str
    line: int
    decides: bool  # True: a file the instructions read; False: a mention (advisory)


@dataclass
class _Block:
    """Where a shell session stands: its folder (None: the campaign's; "": elsewhere) and
    whether a command left files no path says (an archive, a download, a clone)."""

    cwd: str | None = None
    unpacked: bool = False


def _unquote(word: str) -> str:
    return word.strip("`'\"()")


def _words(chunk: str) -> list[str]:
    """A command's words, unquoted, a prompt and environment assignments aside."""
    words = [_unquote(w) for w in _WORD.findall(chunk)]
    while words and (words[0] in PROMPTS or _ASSIGNMENT.fullmatch(words[0])):
        words.pop(0)  # "$ ", "CUDA_VISIBLE_DEVICES=0"
    return words


_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=\S*")


def _segment(line: str, start: int) -> list[str]:
    """The words before ``start`` of the command it is in."""
    begin = 0
    for match in _SEPARATORS.finditer(line, 0, start):
        begin = match.end()
    return _words(line[begin:start])


def _program(words: list[str]) -> tuple[str, list[str]]:
    """(the program, its arguments) of a command's words: launchers skipped, and the script
    or module a launcher runs is the program."""
    rest = list(words)
    while rest and (rest[0] in LAUNCHERS or _PYTHON.fullmatch(rest[0])):
        rest.pop(0)
        while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c"):
            rest.pop(0)  # "python -u", "accelerate launch --multi_gpu"
        if rest[:1] == ["-m"]:
            rest.pop(0)
    if not rest:
        return "", []
    return rest[0].rsplit("/", 1)[-1], rest[1:]


_PYTHON = re.compile(r"python\d[\d.]*")
_WINDOW = 2000  # how far back a call's parenthesis is looked for
# A line is read up to here: commands and sentences are short, and a minified blob would
# cost quadratic time.
_MAX_LINE = 2000


def _enclosing_call(line: str, start: int) -> str | None:
    """The last dotted name of the innermost call still open at ``start``, or None:
    ``torch.load('x', ...`` -> "load"."""
    depth, quote = 0, ""
    for i in range(start - 2, max(-1, start - _WINDOW), -1):  # start - 1: the path's quote
        char = line[i]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == ")":
            depth += 1
        elif char == "(":
            if depth == 0:
                name = _CALL.search(line, 0, i)
                return name.group(1).rsplit(".", 1)[-1] if name else None
            depth -= 1
    return None


def _flag(head: str, words: list[str]) -> str | None:
    """The flag whose value the path is ("--ckpt runs/x.pt", "--out=runs/x.pt"), or None."""
    glued = _GLUED.search(head)
    if glued is not None:
        return glued.group(1)
    return words[-1] if words and words[-1].startswith("-") else None


_GLUED = re.compile(r"(?:^|\s)(--?[\w-]+)=[`'\"]?$")


def _role(line: str, start: int, end: int, exists: Collection[str]) -> str:
    """How the instructions name the path at ``line[start:end]``: "read", "written",
    "after-input" (a positional argument after a file the command reads: an output) or
    "mentioned"."""
    head = line[:start]
    if _REDIRECT.search(head):
        return "written"
    if _READ_REDIRECT.search(head):
        return "read"
    call = _enclosing_call(line, start)
    if call == "open":
        return "written" if _WRITE_MODE.match(line, end + 1) else "read"
    if call in WRITERS:
        return "written"
    if call in READERS:
        return "read"
    words = _segment(line, start)
    program, args = _program(words)
    if program in COPIES:
        last = _COPY_END.match(line, end) is not None
        return "written" if last and any(not a.startswith("-") for a in args) else "read"
    if program in READ_COMMANDS:
        return "read"
    if program in CREATES:
        return "written"
    flag = _flag(head, words)
    if flag is not None:
        return "written" if OUTPUT_FLAG.fullmatch(flag) else \
            "read" if INPUT_FLAG.fullmatch(flag) else "mentioned"
    if any(_exists(a, exists) for a in args if not a.startswith("-")):
        return "after-input"
    return "mentioned"


_COPY_END = re.compile(r"[`'\"]?[ \t]*(?:$|&&|\|\||[;|)])")


def _exists(word: str, exists: Collection[str]) -> bool:
    path = word.removeprefix("./").rstrip("/")
    return bool(path) and path in exists


# -- what the commands shown produce -------------------------------------------------------

_TOKEN = re.compile(r"(?<![\w./$~-])((?:\./)?[\w.-]+(?:/[\w.-]+)*)/?")


def _produced(text: str, exists: Collection[str]) -> tuple[set[str], set[str]]:
    """(the files, the folders) the commands of ``text`` write or create, anywhere in it."""
    files: set[str] = set()
    folders: set[str] = set()
    for whole in text.splitlines():
        line = whole[:_MAX_LINE]
        for match in _TOKEN.finditer(line):
            path = match.group(1).removeprefix("./")
            if "/" in path and _writes(line, match.start(1), match.end(1), exists):
                (files if _PATH.fullmatch(path) else folders).add(path)
    return files, folders


def _writes(line: str, start: int, end: int, exists: Collection[str]) -> bool:
    """Whether a command of the line writes (or creates) the path at ``line[start:end]``."""
    head = line[:start]
    call = _enclosing_call(line, start)
    if _REDIRECT.search(head) or call in WRITERS or (
            call == "open" and _WRITE_MODE.match(line, end + 1)):
        return True
    if call in READERS:
        return False
    words = _segment(line, start)
    program, args = _program(words)
    if program in CREATES:
        return True
    if program in COPIES:
        return _COPY_END.match(line, end) is not None and any(
            not a.startswith("-") for a in args)
    if program in READ_COMMANDS:
        return False
    flag = _flag(head, words)
    if flag is not None:
        return OUTPUT_FLAG.fullmatch(flag) is not None or flag in ("-d", "-C", "--local-dir")
    if program in ("git", "huggingface-cli", "hf") and args[:1] in (["clone"], ["download"]):
        return True  # a clone's folder, a download's (after the repository's name)
    # A new positional argument after a file the command reads: "merge.py IN OUT",
    # "optimum-cli export onnx --model IN OUT/" (never a folder the campaign holds).
    return not _exists(line[start:end], exists) and any(_exists(a, exists) for a in args)


# -- the reading ---------------------------------------------------------------------------


def _commands(line: str) -> list[tuple[int, list[str]]]:
    """(where each command of the line ends, its words)."""
    found, begin = [], 0
    for match in [*_SEPARATORS.finditer(line), None]:
        end = match.start() if match is not None else len(line)
        found.append((end, _words(line[begin:end])))
        begin = match.end() if match is not None else end
    return found


def _follow(words: list[str], block: _Block, exists: Collection[str]) -> None:
    """Move the session's state over one command that ran."""
    if not words:
        return
    if words[0] in CHANGES_FOLDER:
        target = words[1].removeprefix("./").rstrip("/") if len(words) > 1 else "~"
        if target == "." or (words[0] == "popd" and block.cwd is not None):
            return
        # Another folder of the campaign, or somewhere else: paths are relative to it.
        block.cwd = target if block.cwd is None and target in exists else ""
    elif words[0] in UNPACKS:
        block.unpacked = True


def _mentions(text: str, exists: Collection[str]) -> Iterator[tuple[str, int, str, _Block]]:
    """(path, line, role, the session's state there) of every campaign-like path named."""
    block, fenced = _Block(), False
    for number, whole in enumerate(text.splitlines(), 1):
        line = whole[:_MAX_LINE]
        if _FENCE.match(line):
            fenced, block = not fenced, _Block()
            continue
        if not fenced:
            block = _Block()  # prose: a `cd` in a sentence holds for its line
        commands = _commands(line)
        for match in _PATH.finditer(line):
            while commands and commands[0][0] <= match.start():
                _follow(commands.pop(0)[1], block, exists)
            path = match.group(1).removeprefix("./")
            yield path, number, _role(line, match.start(1), match.end(1), exists), \
                _Block(block.cwd, block.unpacked)
        for _, words in commands:
            _follow(words, block, exists)


def missing_paths(text: str, exists: Collection[str], tops: Collection[str]
                  ) -> list[MissingPath]:
    """The paths of the campaign that ``text`` names and the folder does not hold, once
    each, in order. ``exists``: every path of the folder (files and folders, relative);
    ``tops``: its top-level folders (a path counts as the campaign's when its first folder
    is one of them; others, the training machine's or a package's, are not judged)."""
    files, folders = _produced(text, exists)
    found: dict[str, MissingPath] = {}
    for path, number, role, block in _mentions(text, exists):
        if role in ("written", "after-input") or path.split("/", 1)[0] not in tops:
            continue
        if path in exists or (block.cwd and f"{block.cwd}/{path}" in exists):
            continue
        if path in files or any(path.startswith(f"{d}/") for d in folders):
            continue
        decides = role == "read" and block.cwd is None and not block.unpacked
        seen = found.get(path)
        if seen is None:
            found[path] = MissingPath(path, number, decides)
        elif decides and not seen.decides:
            found[path] = MissingPath(path, number, True)
    return list(found.values())
