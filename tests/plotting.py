"""Rendering check shared by the plot tests."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from PIL import Image


def render(ax, path) -> None:
    """Save the figure of ``ax`` as PNG, check it is a real, non-blank image, close it."""
    ax.figure.savefig(path, dpi=60)
    plt.close(ax.figure)
    with Image.open(path) as image:
        assert image.format == "PNG" and image.size[0] > 100 and image.size[1] > 100
        pixels = np.asarray(image.convert("L"))
    assert pixels.std() > 5  # something was drawn
