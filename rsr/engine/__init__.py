"""The inference engine (vLLM) as rsr runs it: its environment (`env`) and a served checkpoint
(`server`). Nothing here imports vLLM: the engine lives in its own virtual environment and is
started as a process."""
