"""rstar's PyTorch trainer worker: GRPO-RoC / SFT steps over HTTP, and a transformers reference engine."""

__version__ = "0.1.0"
