"""Builds a version-1 contacts database; used for the sample in the image and by the test."""
import random
import sqlite3
import sys

V1 = """CREATE TABLE contacts (id INTEGER PRIMARY KEY, full_name TEXT NOT NULL, email TEXT,
phone TEXT, tags TEXT, created TEXT NOT NULL);"""


def build(path: str, seed: int) -> None:
    rng = random.Random(seed)
    con = sqlite3.connect(path)
    con.executescript(V1)
    firsts = ["Ana", "Jean Luc", "Ole", "María José", "Wei", "Zoë", "Tom"]
    lasts = ["Berg", "de la Cruz", "Smith", "O'Neil", "Li", "Ødegård"]
    emails: list[str] = []
    for i in range(1, rng.randint(25, 45)):
        full = rng.choice([f"{rng.choice(firsts)} {rng.choice(lasts)}", rng.choice(["Prince", "Cher"]),
                           f"  {rng.choice(firsts)}  {rng.choice(lasts)} "])
        if emails and rng.random() < 0.25:
            e = rng.choice(emails)
            email = rng.choice([e.upper(), f" {e}", e.title()])
        elif rng.random() < 0.1:
            email = rng.choice([None, "", "  "])
        else:
            email = f"user{rng.randint(1, 10**5)}@Example.ORG"
            emails.append(email.lower())
        phones = [rng.choice(["+47 912 34 567", "(030) 1234-567", "555.0100", "+1-202-555-0143", "0049 30 123"]) + str(rng.randint(0, 9))
                  for _ in range(rng.choice([0, 1, 1, 2, 3]))]
        phone = rng.choice([";", " ; "]).join(phones) if phones else rng.choice([None, ""])
        tags = ",".join(rng.sample(["VIP", "lead", " Customer", "vip", "partner ", "", "Lead"], rng.randint(0, 4))) or rng.choice([None, ""])
        created = f"{rng.randint(1, 28):02d}.{rng.randint(1, 12):02d}.{rng.randint(2015, 2024)}"
        con.execute("INSERT INTO contacts VALUES (?, ?, ?, ?, ?, ?)", (i * 3, full, email, phone, tags, created))
    con.commit()
    con.close()


if __name__ == "__main__":
    build(sys.argv[1], int(sys.argv[2]))
