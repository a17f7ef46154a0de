class Item:
    """A catalogue entry. Tags are kept in insertion order without duplicates."""

    def __init__(self, sku, name, tags=[]):
        self.sku = sku
        self.name = name
        self.tags = tags
        for t in list(tags):
            if tags.count(t) > 1:
                tags.remove(t)

    def tag(self, tag):
        if tag not in self.tags:
            self.tags.append(tag)

    def __repr__(self):
        return f"Item({self.sku!r}, {self.name!r}, tags={self.tags!r})"
