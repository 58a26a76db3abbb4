"""The CoW as a graph: label adjacency, edge lists, variant strings and the topology match.

Everything here follows CoWBenchmark/TopCoW_Eval_Metrics (``topcow24_eval`` @25ca839) as
specified in topcow.md, "Task 1": "A touches B" means some voxel of label A has a voxel of label
B in its 26-neighbourhood (the array border counts as background, as on the official zero-padded
array). Arrays are label maps in (x, y, z) index order (:mod:`rexmle.io`), so axis 0 is the
SimpleITK x index used by the left-right flip rule.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from rexmle.metrics.lesions import DetectionOutcome, label_detection
from rexmle.metrics.topology import component_count, label_neighbors

from .labels import (
    ANTERIOR_EDGES,
    ANTERIOR_LABELS,
    POSTERIOR_EDGES,
    POSTERIOR_LABELS,
    variant_string,
)

REGION_LABELS: dict[str, tuple[int, ...]] = {
    "anterior": ANTERIOR_LABELS,
    "posterior": POSTERIOR_LABELS,
}


def neighbours_of(neighbours: dict[int, set[int]], label: int) -> tuple[int, ...]:
    """Sorted non-zero labels touching ``label`` (empty when the label is absent)."""
    return tuple(sorted(neighbours.get(label, ())))


def edge_bits(
    present: set[int], neighbours: dict[int, set[int]]
) -> dict[str, tuple[int, int, int, int]]:
    """Anterior and posterior edge bits of a label map from its labels and neighbour sets.

    Definition (topcow.md): anterior = [L-A1, Acom, 3rd-A2, R-A1] with L-A1 = 12 present and
        touching 6, Acom = 10 present, 3rd-A2 = 15 present, R-A1 = 11 present and touching 4;
        posterior = [L-Pcom, L-P1, R-P1, R-Pcom] with L-Pcom = 9 present, L-P1 = 3 touching 1,
        R-P1 = 2 touching 1, R-Pcom = 8 present.

    Args:
        present: the non-zero labels present in the map.
        neighbours: label -> labels touching it (`rexmle.metrics.topology.label_neighbors`).

    Returns:
        ``{"anterior": bits, "posterior": bits}``, each bit 0 or 1.
    """

    def touches(a: int, b: int) -> int:
        return int(b in neighbours.get(a, ()))

    anterior = (touches(12, 6), int(10 in present), int(15 in present), touches(11, 4))
    posterior = (int(9 in present), touches(3, 1), touches(2, 1), int(8 in present))
    return {"anterior": anterior, "posterior": posterior}


def edge_dict(bits: dict[str, tuple[int, int, int, int]]) -> dict[str, dict[str, int]]:
    """Edge bits as the nested edge-list mapping of the ``.yml``/JSON files."""
    return {
        "anterior": dict(zip(ANTERIOR_EDGES, bits["anterior"], strict=True)),
        "posterior": dict(zip(POSTERIOR_EDGES, bits["posterior"], strict=True)),
    }


def variant_strings(bits: dict[str, tuple[int, int, int, int]]) -> dict[str, str]:
    """``{"anterior": "Var_Ant_a_b_c_d", "posterior": "Var_Pos_e_f_g_h"}``."""
    return {region: variant_string(region, region_bits) for region, region_bits in bits.items()}


def _median_x(labels: np.ndarray, label: int) -> float:
    return float(np.median(np.nonzero(labels == label)[0]))


def is_flipped(labels: npt.NDArray[np.integer], region: str, present: set[int]) -> bool:
    """Whether a label map is left-right flipped, judged by the region's landmark labels.

    Definition: with median_x(l) = numpy median of the x indices (array axis 0) of label l:
        anterior: if 6 and 4 are present, flipped = median_x(6) < median_x(4); else if 12 and 11
        are present, flipped = median_x(12) < median_x(11); else False.
        posterior: if 3 and 2 are present, flipped = median_x(3) < median_x(2); else False.
        (LPS+ images: x grows towards the patient's left, so left labels lie at larger x.)
    Follows: the official topology check (topcow.md, "Topology match").

    Args:
        labels: 3-D label map in (x, y, z) order.
        region: ``"anterior"`` or ``"posterior"``.
        present: the non-zero labels present in ``labels``.

    Returns:
        True when flipped.
    """
    landmark_pairs = ((6, 4), (12, 11)) if region == "anterior" else ((3, 2),)
    for left, right in landmark_pairs:
        if left in present and right in present:
            return _median_x(labels, left) < _median_x(labels, right)
    return False


class LabelMapGraph:
    """What the topology scores need from one (cropped) label map, computed once."""

    def __init__(self, labels: npt.NDArray[np.integer]) -> None:
        self.labels = labels
        counts = np.bincount(labels.ravel(order="K"), minlength=16)
        self.present: set[int] = {int(v) for v in np.flatnonzero(counts) if v != 0}
        self.neighbours = label_neighbors(labels)
        self.bits = edge_bits(self.present, self.neighbours)
        self._b0: dict[int, int] = {}

    def b0(self, label: int) -> int:
        """Number of 26-connected components of ``label`` (0 when absent)."""
        if label not in self._b0:
            self._b0[label] = (
                component_count(self.labels == label, connectivity=26)
                if label in self.present
                else 0
            )
        return self._b0[label]


def region_matches(pred: LabelMapGraph, truth: LabelMapGraph, region: str) -> bool:
    """The official topology verdict of one region.

    Definition: every label l of the region (anterior 10, 11, 12, 15; posterior 2, 3, 8, 9)
        must (i) be detected TP or TN (IoU ≥ 0.25 rule of the group-2 detection), (ii) have the
        same sorted neighbour set in P as in G, and (iii) the same number of 26-connected
        components; and the prediction must not be left-right flipped (:func:`is_flipped`).

    Args:
        pred: graph of the cropped prediction.
        truth: graph of the cropped reference, same shape.
        region: ``"anterior"`` or ``"posterior"``.

    Returns:
        True when the region matches.
    """
    for label in REGION_LABELS[region]:
        outcome = label_detection(pred.labels, truth.labels, label, iou_threshold=0.25)
        if outcome not in (DetectionOutcome.TP, DetectionOutcome.TN):
            return False
        if neighbours_of(pred.neighbours, label) != neighbours_of(truth.neighbours, label):
            return False
        if pred.b0(label) != truth.b0(label):
            return False
    return not is_flipped(pred.labels, region, pred.present)
