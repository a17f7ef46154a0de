#!/bin/bash
set -e
cat > /app/top_customers.sql <<'SQL'
SELECT c.name AS name,
       c.country AS country,
       count(DISTINCT o.id) AS orders,
       sum(i.quantity * i.unit_price_cents) AS revenue_cents
FROM customers c
JOIN orders o ON o.customer_id = c.id
JOIN order_items i ON i.order_id = o.id
WHERE o.ordered_at >= '2023-01-01' AND o.ordered_at < '2024-01-01'
  AND o.status IN ('shipped', 'delivered')
GROUP BY c.id
ORDER BY revenue_cents DESC, name ASC, c.id ASC
LIMIT 5;
SQL
sqlite3 -header -csv /app/shop.db < /app/top_customers.sql
