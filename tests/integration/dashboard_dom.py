"""The DOM of a dashboard page as Chromium dumped it (--dump-dom), for the
browser tests: elements by id, by tag and class, in document order, with
their text and attributes."""
import re
from html.parser import HTMLParser

# HTML's void elements (Chromium writes SVG's with end tags).
VOID = {"br", "img", "input", "meta", "link", "col", "hr", "wbr", "source", "area", "base"}


class Dom(HTMLParser):
    def __init__(self, text):
        super().__init__()
        self.by_id, self.all, self.stack = {}, [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        el = {"tag": tag, "attrs": dict(attrs), "text": "", "pos": len(self.all)}
        self.all.append(el)
        if "id" in el["attrs"]:
            self.by_id[el["attrs"]["id"]] = el
        if tag not in VOID:
            self.stack.append(el)

    def handle_startendtag(self, tag, attrs):
        el = {"tag": tag, "attrs": dict(attrs), "text": "", "pos": len(self.all)}
        self.all.append(el)
        if "id" in el["attrs"]:
            self.by_id[el["attrs"]["id"]] = el

    def handle_endtag(self, tag):
        if not any(el["tag"] == tag for el in self.stack):
            return
        while self.stack:
            if self.stack.pop()["tag"] == tag:
                break

    def handle_data(self, data):
        for el in self.stack:
            el["text"] += data

    def text(self, id):
        return self.by_id[id]["text"].strip() if id in self.by_id else None

    def attr(self, id, name):
        return self.by_id[id]["attrs"].get(name) if id in self.by_id else None

    def pos(self, id):
        """Document order of element ID (None when absent)."""
        return self.by_id[id]["pos"] if id in self.by_id else None

    def find(self, tag=None, cls=None, **attrs):
        out = []
        for el in self.all:
            if tag and el["tag"] != tag:
                continue
            if cls and cls not in el["attrs"].get("class", "").split():
                continue
            if any(el["attrs"].get(k.replace("_", "-")) != str(v) for k, v in attrs.items()):
                continue
            out.append(el)
        return out


def number(text):
    return float(re.sub(r"[^0-9.eE+-]", "", text))


class Checks:
    """Collects failed checks; report() prints them and gives the exit code."""
    def __init__(self):
        self.errors = []

    def eq(self, what, got, want):
        try:
            same = float(got) == float(want)
        except (TypeError, ValueError):
            same = str(got) == str(want)
        if not same:
            self.errors.append(f"{what}: page shows {got!r}, expected {want!r}")

    def true(self, what, cond):
        if not cond:
            self.errors.append(what)

    def report(self, ok_message):
        if self.errors:
            print("\n".join(self.errors))
            return 1
        print(ok_message)
        return 0
