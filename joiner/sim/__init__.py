"""The simulation: virtual clock and event loop, the models around the controllers
(kube-scheduler, kubelet/node boot, workloads and traces), the scenario file and the report.
"""
