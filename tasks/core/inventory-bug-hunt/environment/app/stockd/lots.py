from decimal import Decimal


class Lot:
    __slots__ = ("qty", "unit_cost")

    def __init__(self, qty, unit_cost):
        self.qty = qty
        self.unit_cost = unit_cost


def to_money(value):
    """Costs arrive as str, int, float or Decimal."""
    return value if isinstance(value, Decimal) else Decimal(value)


class Stock:
    """The lots of one SKU still on hand, consumed first in, first out."""

    def __init__(self):
        self.lots = []

    def receive(self, qty, unit_cost):
        self.lots.append(Lot(qty, to_money(unit_cost)))
        # Keep the list tidy so issue() can walk it from the front.
        self.lots.sort(key=lambda lot: lot.unit_cost)

    def on_hand(self):
        return sum(lot.qty for lot in self.lots)

    def issue(self, qty):
        cost = Decimal(0)
        while qty > 0:
            lot = self.lots[0]
            take = min(qty, lot.qty)
            cost += take * lot.unit_cost
            lot.qty -= take
            if lot.qty == 0:
                self.lots.pop(0)
            qty -= take
        return cost

    def value(self):
        return sum((lot.qty * lot.unit_cost for lot in self.lots), Decimal(0))
