"""Opening a dashboard page in AppTest. The pages are functions (st.Page(callable, url_path=NAME)), and
AppTest.switch_page only takes page files, so the test selects the page by the hash Streamlit gives it:
the hash of its url_path, exactly what a browser's request for /NAME resolves to."""

from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash

from reporting.ui.pages import PAGES

PAGE_NAMES = tuple(name for name, _, _ in PAGES)


def open_page(at: AppTest, name: str) -> AppTest:
    if name not in PAGE_NAMES:
        raise ValueError(f"no dashboard page {name!r}; pages: {', '.join(PAGE_NAMES)}")
    at._page_hash = calc_hash(name)
    return at
