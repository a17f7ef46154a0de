ALTER TABLE items ADD COLUMN location TEXT NOT NULL DEFAULT 'UNASSIGNED';
UPDATE items SET location = 'A-' || substr(sku, 5, 2) WHERE sku LIKE 'SKU-%';
INSERT INTO schema_version VALUES (2);
