"""Generic object-detection pieces (SSD now, Mask R-CNN next): boxes, default boxes, matching,
the SSD loss, static-shape NMS, the pycocotools evaluator and the canvas-digits dataset.

Box conventions: "ltrb" = (left, top, right, bottom) and "xywh" = (centre x, centre y, width,
height), both normalised to [0, 1] by the image size unless a function says pixels.
"""
