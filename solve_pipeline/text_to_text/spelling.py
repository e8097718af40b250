"""English words for numbers as text normalisation writes them: "123" is "one hundred twenty three"
(no "and", no hyphens), 1921 as a year is "nineteen twenty one", 19 as an ordinal "nineteenth"."""

from __future__ import annotations

_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
         "sixteen seventeen eighteen nineteen").split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_SCALES = ((10**12, "trillion"), (10**9, "billion"), (10**6, "million"), (1000, "thousand"))
_ORDINALS = {"one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth",
             "nine": "ninth", "twelve": "twelfth"}
DIGIT_WORDS = dict(zip("0123456789", "o one two three four five six seven eight nine".split()))


def cardinal(n: int) -> str:
    """The words of a whole number."""
    if n < 0:
        return "minus " + cardinal(-n)
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else " " + _ONES[n % 10])
    if n < 1000:
        return _ONES[n // 100] + " hundred" + ("" if n % 100 == 0 else " " + cardinal(n % 100))
    for size, name in _SCALES:
        if n >= size:
            head, rest = divmod(n, size)
            return cardinal(head) + " " + name + ("" if rest == 0 else " " + cardinal(rest))
    raise AssertionError(n)


def ordinal(n: int) -> str:
    """"twenty first", "nineteenth", "one hundredth"."""
    words = cardinal(n).split()
    last = words[-1]
    words[-1] = _ORDINALS.get(last, last[:-1] + "ieth" if last.endswith("y") else last + "th")
    return " ".join(words)


def year(n: int) -> str:
    """A year as said: 1921 "nineteen twenty one", 1905 "nineteen oh five", 1900 "nineteen hundred",
    2005 "two thousand five", 2015 "twenty fifteen"."""
    if n < 1000 or n >= 10000 or 2000 <= n < 2010 or n % 1000 == 0:
        return cardinal(n)
    head, tail = divmod(n, 100)
    if tail == 0:
        return cardinal(head) + " hundred"
    return cardinal(head) + " " + (cardinal(tail) if tail >= 10 else "oh " + cardinal(tail))


def decimal(text: str) -> str | None:
    """"3.25" is "three point two five"; None unless `text` is such a number."""
    whole, _, fraction = text.partition(".")
    if not fraction.isdigit() or not (whole.isdigit() or whole == ""):
        return None
    head = cardinal(int(whole)) + " " if whole else ""
    return head + "point " + " ".join("zero" if d == "0" else DIGIT_WORDS[d] for d in fraction)
