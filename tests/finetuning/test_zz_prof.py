import cProfile, pstats, time, io, contextlib, dataclasses
from tests.finetuning.test_loop import data, classifier_settings  # noqa
from albert_tf.finetuning import classifier

def test_prof(data, tmp_path):
    s = classifier_settings(data, tmp_path / "a")
    t = time.time()
    with contextlib.redirect_stderr(io.StringIO()) as err:
        cProfile.runctx("classifier.run(s)", globals(), locals(), "/tmp/cls.prof")
    print("first run", time.time() - t)
    print(err.getvalue()[-3000:])
    t = time.time()
    with contextlib.redirect_stderr(io.StringIO()):
        classifier.run(dataclasses.replace(s, output_dir=str(tmp_path / "b")))
    print("second run", time.time() - t)
