"""The building blocks qpnlp 0.1 exported from ``qpnlp.models`` still import from there, with a DeprecationWarning
that names their home in ``qpnlp.nn`` (and the caller's line); other missing names stay AttributeErrors."""

import importlib

import pytest

import qpnlp.nn

MOVED = ("CGRNN", "CGRNNCell", "ComplexOrderEmbedding", "ComplexWordEmbedding", "Hirose", "ModReLU",
         "RealPositionalEmbedding", "StateTransition", "WordWeighting", "hirose", "make_embedding", "modrelu")


@pytest.mark.parametrize("name", MOVED)
def test_a_name_moved_to_nn_warns_and_is_the_same_object(name):
    models = importlib.import_module("qpnlp.models")
    with pytest.warns(DeprecationWarning, match=rf"qpnlp\.models\.{name} moved to qpnlp\.nn\.{name}") as caught:
        moved = getattr(models, name)
    assert moved is getattr(qpnlp.nn, name)
    assert caught[0].filename == __file__                     # the user's line, not qpnlp's


def test_from_import_of_a_moved_name_warns_at_the_import_line():
    with pytest.warns(DeprecationWarning, match="import it from qpnlp.nn") as caught:
        from qpnlp.models import ComplexWordEmbedding
    assert ComplexWordEmbedding is qpnlp.nn.ComplexWordEmbedding
    assert {w.filename for w in caught} == {__file__}


def test_other_missing_names_are_attribute_errors():
    import qpnlp.models as models

    with pytest.raises(AttributeError, match="has no attribute 'NoSuchModel'"):
        models.NoSuchModel  # noqa: B018
