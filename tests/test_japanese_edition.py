"""The Japanese edition (notebooks/ja/) stays in step with the English chapters, cell by cell.

For every English chapter, its Japanese twin must exist and have the same cells in the same order, with the
same types and ids; code cells equal to the English ones ignoring comments (compared as token streams), except
the set-up cell, which sets the language the helpers speak (tools/links.py makes it, tests/test_links.py checks
it); and every markdown cell translated from the English text as it is now (its metadata["translated_from"] is
the hash of that text; tools/ja_sync.py explains the workflow).
The stored outputs are the Japanese edition's own (a hint or a summary is printed in Japanese there): nbval
runs the Japanese chapters too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

from tools import ja_sync, series

ROOT = ja_sync.ROOT

CHAPTERS = series.chapters("en")
JAPANESE = series.notebooks("ja")  # notebooks/ja/: the chapters, the glossary and the cheat sheet
ONLY_CODE_OR_LINKS = re.compile(r"^(\s|`[^`]*`|!?\[[^\]]*\]\([^)]*\)|[·|←→#*-])*$")


code_tokens = ja_sync.code_tokens


@pytest.mark.parametrize("english_path", CHAPTERS, ids=lambda p: p.stem)
def test_japanese_chapter_matches_the_english_one(english_path: Path):
    ja_path = series.twin(english_path)
    assert ja_path.exists(), (f"{ja_path.relative_to(ROOT)} is missing: translate {english_path.name} "
                              "(python -m tools.ja_sync)")
    english = nbformat.read(english_path, as_version=4)
    ja = nbformat.read(ja_path, as_version=4)
    name = ja_path.relative_to(ROOT)
    layout = [(c.cell_type, c.id) for c in english.cells]
    assert [(c.cell_type, c.id) for c in ja.cells] == layout, (
        f"{name}: cells differ from {english_path.name} in number, order, type or id; run python -m tools.ja_sync")
    problems = []
    for number, (en, jp) in enumerate(zip(english.cells, ja.cells, strict=True)):
        where = f"{name}, cell {number} (id {en.id})"
        if en.cell_type == "code" and en.id != ja_sync.SETUP_ID:
            if code_tokens(en.source) != code_tokens(jp.source):
                problems.append(f"{where}: code differs from the English cell; run python -m tools.ja_sync")
        elif en.cell_type == "markdown" and en.id != ja_sync.BADGE_ID:
            recorded = jp.metadata.get(ja_sync.HASH_KEY)
            if recorded is None:
                problems.append(f"{where}: not translated yet")
            elif recorded != ja_sync.english_hash(en.source):
                problems.append(f"{where}: the English text changed since it was translated; update the "
                                "Japanese text, then run python -m tools.ja_sync --add")
            elif jp.source == en.source and not ONLY_CODE_OR_LINKS.match(en.source):
                problems.append(f"{where}: left in English")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("english_path", CHAPTERS, ids=lambda p: p.stem)
def test_japanese_badges_open_the_japanese_chapter(english_path: Path):
    ja_path = series.twin(english_path)
    badges = [c for c in nbformat.read(ja_path, as_version=4).cells if c.id == ja_sync.BADGE_ID]
    assert [c.source for c in badges] == [ja_sync.badge_for(ja_path)]
    assert "notebooks/ja/" in badges[0].source


JAPANESE_PAGES = (JAPANESE / "glossary.md", JAPANESE / "cheatsheet.md", JAPANESE / "reference.md",
                  ROOT / "README.ja.md")


def test_glossary_cheatsheet_and_readme_exist():
    for path in JAPANESE_PAGES:
        assert path.exists(), f"{path.relative_to(ROOT)} is missing"


def test_glossary_anchors_used_by_the_chapters_exist():
    """Every [term](glossary.md#anchor) link in the Japanese chapters points at a glossary heading."""
    glossary = (JAPANESE / "glossary.md").read_text(encoding="utf-8")
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', glossary))
    missing = set()
    for path in series.chapters("ja"):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                missing |= {f"{path.name}: #{a}" for a in re.findall(r"glossary\.md#([\w-]+)", cell.source)
                            if a not in anchors}
    assert not missing, sorted(missing)


# --- The style guide's term list (docs/ja-style.md, section 5) -------------------------------------------------
STYLE_GUIDE = ROOT / "docs" / "ja-style.md"
JAPANESE_LETTER = r"[\u3041-\u3096\u30a1-\u30fa\u30fc\u3005\u4e00-\u9fff]"  # hiragana, katakana, ー, 々, kanji
EXEMPT = re.compile(r"```.*?```"          # fenced code blocks
                    r"|``.+?``|`[^`\n]+`"  # code spans
                    r"|\$\$.+?\$\$|\$[^$\n]+\$"  # math
                    r"|\]\([^)\s]*\)"      # a link's target
                    r"|https?://[^\s)>|]+"  # a bare URL
                    r"|<[A-Za-z/!][^>\n]*>"  # HTML tags (anchors)
                    r"|『[^』\n]*』",        # book titles, spelt as published
                    re.DOTALL)
PLACEHOLDER = "\ue000"  # neither a Japanese letter nor ASCII: adjacency rules do not fire on it


def forbidden_variants() -> list[tuple[re.Pattern, str, str]]:
    """(compiled pattern, the pattern as written, what to use instead) from the guide's ```forbidden block."""
    block = re.search(r"^```forbidden\n(.*?)^```", STYLE_GUIDE.read_text(encoding="utf-8"), re.DOTALL | re.MULTILINE)
    assert block, f"{STYLE_GUIDE.relative_to(ROOT)} has no ```forbidden block"
    rules = []
    for line in block.group(1).splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        pattern, _, instead = line.partition(" => ")
        assert instead, f"{STYLE_GUIDE.relative_to(ROOT)}: {line!r} is not 'pattern => replacement'"
        rules.append((re.compile(pattern.replace("J", JAPANESE_LETTER)), pattern, instead.strip()))
    return rules


def prose(markdown: str) -> str:
    """The text the style rules apply to: code, math, URLs, HTML tags and book titles replaced by a placeholder
    (followed by the newlines they held, so that line numbers stay)."""
    def hide(match: re.Match) -> str:
        text = match.group()
        return ("]" if text.startswith("](") else "") + PLACEHOLDER + "\n" * text.count("\n")
    return EXEMPT.sub(hide, markdown)


def style_problems(where: str, markdown: str, rules, by_line: bool = False) -> list[str]:
    """One line per forbidden variant found; by_line names the line (for a markdown file) after `where`."""
    text = prose(markdown)
    return [f"{where}{f', line {text.count(chr(10), 0, m.start()) + 1}' if by_line else ''}: 「{m.group()}」 "
            f"(forbidden by /{written}/) -> {instead}"
            for pattern, written, instead in rules for m in pattern.finditer(text)]


def japanese_texts() -> list[tuple[str, str, bool]]:
    """(where, markdown, by_line) for every Japanese markdown cell, the glossary, cheat sheet and
    README.ja.md."""
    texts = []
    for path in series.chapters("ja"):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown" and cell.id != ja_sync.BADGE_ID:
                texts.append((f"{path.relative_to(ROOT)}, cell id {cell.id}", cell.source, False))
    for path in JAPANESE_PAGES:
        texts.append((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"), True))
    return texts


def test_style_rules_catch_their_examples():
    """The parser reads the guide, and the exemptions work: code, URLs and titles are not checked."""
    rules = forbidden_variants()
    assert len(rules) > 30
    assert style_problems("x", "fill 値を使う。", rules)
    assert style_problems("x", "第1章では", rules)
    assert style_problems("x", "評価モード(eval)では", rules)
    assert style_problems("x", "スレッドでの議論", rules)
    assert not style_problems("x", "CPU は 1 スレッドで、2 つの Python スレッドを使う。", rules)
    assert not style_problems("x", "`fill 値` と [第 1 章](01_x.ipynb#経路) と <a id=\"x\"></a>。", rules)
    assert not style_problems("x", "『つくりながら学ぶ! PyTorchによる発展ディープラーニング』", rules)
    assert not style_problems("x", "形状 (N, S) のマスク（`True` は無視する）。", rules)
    assert not style_problems("x", "```\nmake test  # 全部 (2 分)\n```\n", rules)
    assert "x, line 4: 「第2」 (forbidden by /第\\d/) -> 第 N 章（数字の前後に半角スペース）" in style_problems(
        "x", "```\nx\n```\n第2章", rules, by_line=True)
    spelled_otherwise = ("引数をもつ", "しかもたない", "1 つもつ", "で分かる", "前方への視界", "残っているからだ。",
                         "アサートした", "まだ解答がない", "解答の形状は (2, 5)", "チェックのセル")   # 2. 表記
    for spelled in spelled_otherwise:
        assert style_problems("x", spelled, rules), spelled
    for fine in ("もっと前のキー", "をもたらす", "どの行でもちょうど 0", "グループに分かれる", "視野",
                 "解答はその下に隠してある"):
        assert not style_problems("x", fine, rules), fine
    decided_against = ("デフォルトの設定", "検査のチェック", "置換による", "厳密な 0 を返す",
                       "ふつうの分布", "確認セル", "セルフアテンション", "パディング側",
                       "パディングを入れる側", "パッド位置にゴミを入れる", "CPU スレッド 1 本", "1 本のベクトル",
                       "型をそろえる", "貪欲生成", "フル層", "全体を見る層",
                       "1 行にパックする", "層正規化", "勾配を必要とする", "パッドの位置",
                       "キーを見てよい", "未来を見てはならない", "ビット単位で同一", "本章では",
                       "次章は", "ネストテンソル", "プレフィックス言語モデル")   # 4. 表記を 1 つに決めた語の組
    for spelled in decided_against:
        assert style_problems("x", spelled, rules), spelled
    for fine in ("チェックボックス", "**mask pad rows too** にチェックを入れる", "チェックを外す", "`default=True`",
                 "「パッキング」", "1 行に詰める", "パッド位置にゴミ値を入れる", "2 本の線",
                 "1 スレッド", "揃える", "パディングの側", "`requires_grad` が勾配を要求する",
                 "`nn.LayerNorm`", "見えるキー"):
        assert not style_problems("x", fine, rules), fine


def test_japanese_text_follows_the_style_guide():
    rules = forbidden_variants()
    problems = [p for where, text, by_line in japanese_texts() for p in style_problems(where, text, rules, by_line)]
    assert not problems, f"{len(problems)} forbidden variants (docs/ja-style.md):\n" + "\n".join(problems)


def literal_text(node) -> str | None:
    """A string literal's text; an f-string's with each {value} replaced by the placeholder; None otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else PLACEHOLDER for part in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = literal_text(node.left), literal_text(node.right)
        return None if left is None and right is None else (left or PLACEHOLDER) + (right or PLACEHOLDER)
    return None


def japanese_feedback() -> list[tuple[str, str]]:
    """(where, text) for every Japanese text the helpers show a learner: the second argument of each
    Mistake(en, ja), say(en, ja) and Bilingual(en, ja) call under helpers/."""
    found = []
    for path in sorted((ROOT / "helpers").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("Mistake", "say", "Bilingual")
                    and len(node.args) >= 2):
                text = literal_text(node.args[1])
                if text is not None:
                    found.append((f"{path.relative_to(ROOT)}, line {node.lineno}", text))
    return found


def japanese_hints() -> list[tuple[str, str]]:
    """(where, text) for the Japanese hint of every Mistake(en, ja) call under helpers/."""
    found = []
    for path in sorted((ROOT / "helpers").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Mistake" and len(node.args) >= 2:
                text = literal_text(node.args[1])
                if text is not None:
                    found.append((f"{path.relative_to(ROOT)}, line {node.lineno}", text))
    return found


def test_a_japanese_hint_has_no_second_colon():
    """A hint is shown after 「✗ まだ正解ではない：」, so its own 「：」 (outside （…）) would be a second one."""
    hints = japanese_hints()
    assert len(hints) > 100, "the scan found too few Mistake(en, ja) calls"
    outside = re.compile(r"（[^（）]*）")
    problems = [f"{where}: {text}" for where, text in hints if "：" in outside.sub("", text)]
    assert not problems, (f"{len(problems)} hints with a second 「：」 (write 「〜のとき、」, "
                          "「〜が発生した（文面）」; docs/ja-style.md, 3.):\n" + "\n".join(problems))


def test_the_helpers_japanese_follows_the_style_guide_too():
    rules = forbidden_variants()
    texts = japanese_feedback()
    assert any("正解" in text for _, text in texts), "the scan found none of helpers/exercises.py's texts"
    problems = [p for where, text in texts for p in style_problems(where, text, rules)]
    assert not problems, f"{len(problems)} forbidden variants (docs/ja-style.md):\n" + "\n".join(problems)


# the guide's term rules that also apply to code comments
COMMENT_RULES = ("模範解答", "(まだ|受け取った|書いた)解答", "注意(して(よ")


def test_the_japanese_code_comments_use_the_guides_terms():
    """A learner reads the Japanese comments of the exercise cells (「# 隠してある解答を、確認の関数に通す」,
    「# ここに答えを書く」, 「True = 参照してよい」): the guide's terms hold there too."""
    import io
    import tokenize

    rules = [(pattern, written, instead) for pattern, written, instead in forbidden_variants()
             if written.startswith(COMMENT_RULES)]
    assert len(rules) == len(COMMENT_RULES)
    problems, comments = [], 0
    for path in series.chapters("ja"):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            lines = [line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!"))]
            for token in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline):
                if token.type == tokenize.COMMENT and any(ord(ch) > 0x2E7F for ch in token.string):
                    comments += 1
                    problems += [f"{path.name}, cell id {cell.id}: 「{m.group()}」 -> {instead}"
                                 for pattern, _, instead in rules for m in pattern.finditer(token.string)]
    assert comments > 50, "the scan found too few Japanese comments"
    assert not problems, "\n".join(problems)
