"""Run reproduce_qpdn with qpnlp.nn.embedding.TORCH_POLAR_GRADIENT set: python polar_run.py True|False ARGS..."""
import runpy, sys
import qpnlp.nn.embedding as e
e.TORCH_POLAR_GRADIENT = sys.argv[1] == "True"
sys.argv = ["benchmarks/reproduce_qpdn.py"] + sys.argv[2:]
runpy.run_path("benchmarks/reproduce_qpdn.py", run_name="__main__")
