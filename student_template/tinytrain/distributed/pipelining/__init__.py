"""Pipeline parallelism (task 7.5): stages over layers, micro-batches, the GPipe and
1F1B schedules, activations and gradients sent between stages."""

from .p2p import recv_activation, recv_gradient, send_activation, send_gradient
from .schedules import PipelineSchedule, Schedule1F1B, ScheduleGPipe
from .stage import PipelineStage

__all__ = ["PipelineSchedule", "PipelineStage", "Schedule1F1B", "ScheduleGPipe",
           "recv_activation", "recv_gradient", "send_activation", "send_gradient"]
