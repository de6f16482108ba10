"""What `diagnose` found: Finding (one problem, by a stable code), Diagnosis (all of them, with what ran)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import NamedTuple

import torch

from helpers.language import Bilingual, say

# code -> what usually causes it: the last sentence of each message, in the learner's language.
CAUSES: dict[str, Bilingual] = {
    "future-leak": Bilingual(
        "Usually no causal mask reaches attention: the mask is None and the kernel was not told is_causal, or a "
        "bidirectional setting won over the config.",
        "多くの場合、因果マスクがアテンションに届いていない。マスクが None で、カーネルに is_causal が渡っていないか、"
        "双方向の設定が config より優先されている。"),
    "over-masking": Bilingual(
        "Usually a causal mask where none is wanted (an encoder run as a decoder, is_causal left on), or a window "
        "or pad mask that hides real keys.",
        "多くの場合、不要な因果マスクがかかっている（エンコーダをデコーダとして実行した、is_causal が残っている）か、"
        "ウィンドウやパディングマスクが実トークンのキーまで隠している。"),
    "window-mismatch": Bilingual(
        "Usually the sliding window was lost (a hand-made 4-D mask replaced the model's own) or is off by one "
        "(i - j < w against i - j <= w).",
        "多くの場合、スライディングウィンドウが失われている（手作りの 4 次元マスクがモデル自身のものを置き換えた）か、"
        "1 つずれている（i - j < w と i - j <= w の違い）。"),
    "document-leak": Bilingual(
        "Usually the packed documents' block-diagonal mask was not built (position ids or sequence ids ignored), "
        "so a later document sees an earlier one.",
        "多くの場合、詰め込んだ文書どうしのブロック対角マスクが作られず（位置 ID や系列 ID が無視された）、"
        "後の文書が前の文書を見ている。"),
    "pad-leak": Bilingual(
        "Usually the padding mask is dropped on one path (batch size 1, no mask when nothing seems padded, one "
        "padding side), inverted (True = keep against True = pad), or added as a weak finite fill.",
        "多くの場合、どこかのコードパスでパディングマスクが落ちている（バッチサイズ 1 のとき、パディングがないと"
        "見なしてマスクを省いたとき、片側のパディングのときだけなど）か、極性が逆（True = 残す と True = パッド）"
        "か、弱い有限の値として足されている。"),
    "position-ids": Bilingual(
        "The model reads absolute positions, so left padding shifts every real token: pass position_ids counted "
        "over the real tokens, (attention_mask.cumsum(-1) - 1).clamp(min=0), as generate does for a decoder.",
        "このモデルは絶対位置を読むので、左パディングが実トークンの位置をすべてずらす。実トークンだけで数えた "
        "position_ids、(attention_mask.cumsum(-1) - 1).clamp(min=0) を渡す（デコーダでは generate もそうしている）。"),
    "cache-mismatch": Bilingual(
        "Usually the mask of a multi-token step with a cache is built for the new tokens alone (each new token "
        "must see the cached ones and its earlier new ones), or the positions restart at 0.",
        "多くの場合、キャッシュ付きで複数トークンを進めるステップのマスクが新しいトークンだけで作られている"
        "（新しいトークンはキャッシュ済みのものと、それより前の新しいトークンを見なければならない）か、"
        "位置 ID が 0 から振り直されている。"),
    "nan-forward": Bilingual(
        "Usually a fully masked row (a left pad under a causal mask) turns NaN and the next layer carries it into "
        "real rows (weight 0 times value NaN), or an additive mask overflows in low precision.",
        "多くの場合、全部がマスクされた行（因果マスクの下の左パッド）が NaN になり、次の層がそれを実トークンの行へ運ぶ"
        "（重み 0 × バリュー NaN）か、低精度で加算マスクがあふれている。"),
    "nan-gradient": Bilingual(
        "Usually a fully masked row: softmax over only -inf gives NaN, and its gradient is NaN even where the loss "
        "ignores the row.",
        "多くの場合、全部がマスクされた行である。-inf だけの行のソフトマックスは NaN になり、損失がその行を読まなくても"
        "勾配は NaN になる。"),
    "nondeterministic": Bilingual(
        "Usually dropout in training mode: call model.eval() (or set the dropout probabilities to 0) and diagnose "
        "again; nothing else was checked.",
        "多くの場合、学習モードのドロップアウトである。model.eval() を呼んでから（またはドロップアウト確率を 0 に"
        "してから）診断し直すこと。ほかの検査は行っていない。"),
    "batch-dependence": Bilingual(
        "Usually something mixes the items of a batch: batch statistics (BatchNorm in training mode), a mask or "
        "cache shared across items, or a reshape that swaps the batch and length axes.",
        "多くの場合、何かがバッチのサンプルどうしを混ぜている。バッチ統計（学習モードの BatchNorm）、"
        "サンプル間で共有されたマスクやキャッシュ、バッチ軸と長さ軸を入れ替えてしまう reshape などである。"),
}
CODES = tuple(CAUSES)
WARNINGS = ("position-ids",)   # findings about how the model must be called, not a wrong result: `passed` holds


class Finding(NamedTuple):
    """One problem: `code` (one of CODES), `where` (which part of the model and which run), `message` (what was
    measured, by how much, at which positions, and what usually causes it, in the learner's language)."""

    code: str
    where: str
    message: str

    @property
    def severity(self) -> str:
        """"warning" for a finding about how to call the model (position-ids), else "error"."""
        return "warning" if self.code in WARNINGS else "error"


def finding(code: str, where: str, measured: str) -> Finding:
    """A Finding whose message is what was measured, then the code's usual cause."""
    if code not in CAUSES:
        raise ValueError(f"code must be one of {list(CODES)}, got {code!r}")
    return Finding(code, where, f"{measured} {CAUSES[code].said()}")


class Ran(NamedTuple):
    """One check that diagnose ran (or skipped): where, which, and its outcome in words."""

    where: str
    check: str
    outcome: str      # "passed", "failed", or "skipped: <why>"


@dataclass
class Diagnosis:
    """The outcome of diagnose(): `passed` (no finding but warnings), `findings`, `notes` (facts that are not
    problems, e.g. NaN at pad positions only, or a check that could not run), `ran` (every check, with its outcome),
    and the mask patterns it inferred (for show())."""

    model: str
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ran: list[Ran] = field(default_factory=list)
    patterns: list[tuple[str, object]] = field(default_factory=list)   # (where, PatternReport)
    expectations: list[tuple[str, str, str]] = field(default_factory=list)   # (where, expected, where it came from)

    @property
    def errors(self) -> list[Ran]:
        """The checks that could not run (the model raised): a diagnosis with any has not passed."""
        return [r for r in self.ran if r.outcome.startswith("error")]

    @property
    def passed(self) -> bool:
        return not any(f.severity == "error" for f in self.findings) and not self.errors

    @property
    def codes(self) -> list[str]:
        """The finding codes, each once, in the order first found."""
        return list(dict.fromkeys(f.code for f in self.findings))

    def __str__(self) -> str:
        head = say(f"diagnose {self.model}: ", f"diagnose {self.model}：")
        if self.passed:
            head += say("passed", "合格")
        elif not self.codes or all(c in WARNINGS for c in self.codes):
            head += say(f"NOT CHECKED ({len(self.errors)} check(s) could not run)",
                        f"検査できず（実行できなかった検査 {len(self.errors)} 件）")
        else:
            head += say(f"FAILED ({', '.join(c for c in self.codes if c not in WARNINGS)})",
                        f"不合格（{'、'.join(c for c in self.codes if c not in WARNINGS)}）")
        lines = [head]
        for where, expected, source in self.expectations:
            lines.append(say(f"  expected {expected} at {where} ({source})",
                             f"  {where} の期待：{expected}（{source}）"))
        ran = sum(not r.outcome.startswith("skipped") for r in self.ran)
        lines.append(say(f"  {ran} checks ran, {len(self.ran) - ran} skipped",
                         f"  実行した検査 {ran} 件、省いた検査 {len(self.ran) - ran} 件"))
        for f in self.findings:
            lines.append(f"  [{f.code}{say(', warning', '、警告') if f.severity == 'warning' else ''}] "
                         f"{f.where}{say(': ', '：')}{f.message}")
        lines += [say(f"  note: {note}", f"  注：{note}") for note in self.notes]
        return "\n".join(lines)

    def show(self) -> object:
        """Print the report and, where a mask pattern was inferred, draw expected against inferred (matplotlib)."""
        print(self)
        if not self.patterns:
            return None
        from helpers.plots import show_mask_pattern

        return [show_mask_pattern(report) for _, report in self.patterns]

    def to_dict(self) -> dict[str, object]:
        """Everything in JSON-ready types (masks as lists of 0/1 rows, 1 = blocked)."""
        def mask(t: torch.Tensor) -> list[list[int]]:
            return t.int().tolist()
        return {
            "model": self.model, "passed": self.passed, "codes": self.codes,
            "errors": [r._asdict() for r in self.errors],
            "findings": [{"code": f.code, "where": f.where, "message": f.message, "severity": f.severity}
                         for f in self.findings],
            "notes": list(self.notes),
            "ran": [r._asdict() for r in self.ran],
            "expectations": [{"where": w, "expected": e, "source": s} for w, e, s in self.expectations],
            "patterns": [{"where": where, "check": report.check, "passed": report.passed,
                          "expected": mask(report.expected), "inferred": mask(report.inferred)}
                         for where, report in self.patterns],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=1)
