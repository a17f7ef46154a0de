CREATE TABLE products (sku TEXT PRIMARY KEY, name TEXT NOT NULL,
                       reorder_level INTEGER NOT NULL DEFAULT 0 CHECK (reorder_level >= 0));
CREATE TABLE locations (code TEXT PRIMARY KEY);
CREATE TABLE movements (id INTEGER PRIMARY KEY, sku TEXT NOT NULL REFERENCES products(sku),
                        location TEXT NOT NULL REFERENCES locations(code), kind TEXT NOT NULL,
                        qty INTEGER NOT NULL, ref TEXT,
                        CHECK ((kind IN ('receipt', 'transfer_in') AND qty > 0)
                            OR (kind IN ('shipment', 'transfer_out') AND qty < 0)
                            OR (kind = 'adjustment' AND qty <> 0)));
CREATE TABLE stock (sku TEXT NOT NULL REFERENCES products(sku),
                    location TEXT NOT NULL REFERENCES locations(code),
                    qty INTEGER NOT NULL, PRIMARY KEY (sku, location));

-- BEFORE: reject before the row exists, so an aborted insert leaves nothing behind.
CREATE TRIGGER movements_no_negative BEFORE INSERT ON movements
WHEN coalesce((SELECT qty FROM stock WHERE sku = NEW.sku AND location = NEW.location), 0) + NEW.qty < 0
BEGIN
  SELECT RAISE(ABORT, 'insufficient stock');
END;

CREATE TRIGGER movements_apply AFTER INSERT ON movements
BEGIN
  INSERT INTO stock (sku, location, qty) VALUES (NEW.sku, NEW.location, NEW.qty)
  ON CONFLICT (sku, location) DO UPDATE SET qty = qty + excluded.qty;
END;

CREATE TRIGGER movements_no_update BEFORE UPDATE ON movements
BEGIN
  SELECT RAISE(ABORT, 'movements are immutable');
END;

CREATE TRIGGER movements_no_delete BEFORE DELETE ON movements
BEGIN
  SELECT RAISE(ABORT, 'movements are immutable');
END;

CREATE VIEW low_stock AS
SELECT p.sku, p.name, coalesce(sum(s.qty), 0) AS on_hand, p.reorder_level
FROM products p LEFT JOIN stock s ON s.sku = p.sku
GROUP BY p.sku
HAVING coalesce(sum(s.qty), 0) < p.reorder_level;

CREATE VIEW transfer_requests AS
SELECT NULL AS sku, NULL AS from_location, NULL AS to_location, NULL AS qty, NULL AS ref WHERE 0;

CREATE TRIGGER transfer_requests_insert INSTEAD OF INSERT ON transfer_requests
BEGIN
  SELECT RAISE(ABORT, 'transfer qty must be positive') WHERE NEW.qty IS NULL OR NEW.qty <= 0;
  SELECT RAISE(ABORT, 'transfer needs two different locations') WHERE NEW.from_location IS NEW.to_location;
  INSERT INTO movements (sku, location, kind, qty, ref) VALUES (NEW.sku, NEW.from_location, 'transfer_out', -NEW.qty, NEW.ref);
  INSERT INTO movements (sku, location, kind, qty, ref) VALUES (NEW.sku, NEW.to_location, 'transfer_in', NEW.qty, NEW.ref);
END;
